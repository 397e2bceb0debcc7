#!/usr/bin/env bash
# Runs the PyIceberg conformance suite against bin/floe (built by `make
# build`). Needs only python3 (3.10+) with pip.
#
# The virtualenv lives in .cache/venv-pyiceberg (git-ignored) and is
# (re)built only when requirements.txt or the Python version changes: a
# stamp file inside it holds the hash of both. pip's download cache is
# .cache/pip, so nothing is cached outside the repository.
#
# Environment: PYTHON (default python3), FLOE_BIN (default bin/floe),
# PYTEST_ARGS (extra pytest arguments, e.g. "-k branch -x"), PYTEST_TIMEOUT
# (seconds the whole pytest run may take, default 900).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"
venv="$root/.cache/venv-pyiceberg"
stamp="$venv/.floe-requirements.sha256"
requirements="$here/requirements.txt"

if ! command -v "$python" >/dev/null 2>&1; then
	echo "pyiceberg conformance: $python not found; install Python 3.10+ with pip" >&2
	exit 1
fi
"$python" - <<'PY' || exit 1
import sys
if sys.version_info < (3, 10):
    sys.exit(f"pyiceberg conformance: Python 3.10+ needed, {sys.executable} is {sys.version.split()[0]}")
PY

want="$( { "$python" -c 'import sys; print(sys.version)'; cat "$requirements"; } | sha256sum | cut -d' ' -f1)"

if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
	echo "pyiceberg conformance: virtualenv $venv is up to date"
else
	echo "pyiceberg conformance: creating $venv and installing requirements.txt"
	rm -rf "$venv"
	mkdir -p "$root/.cache"
	export PIP_CACHE_DIR="$root/.cache/pip" PIP_DISABLE_PIP_VERSION_CHECK=1
	if "$python" -m venv "$venv" 2>/dev/null && [[ -x "$venv/bin/pip" ]]; then
		pip=("$venv/bin/python" -m pip)
	else
		# Debian-style interpreters without ensurepip (python3-venv not
		# installed): make a bare venv and let the interpreter's own pip
		# install into it.
		echo "pyiceberg conformance: venv has no pip; installing with $python -m pip --python"
		rm -rf "$venv"
		"$python" -m venv --without-pip "$venv"
		pip=("$python" -m pip --python "$venv/bin/python")
	fi
	"${pip[@]}" install --quiet --prefer-binary --no-input -r "$requirements"
	echo "$want" >"$stamp"
fi

# No bytecode or pytest cache inside the source tree.
export PYTHONDONTWRITEBYTECODE=1
export FLOE_BIN="${FLOE_BIN:-$root/bin/floe}"
cd "$root"
# pytest's exit codes: 0 all passed, 1 some failed, 5 nothing collected.
# Anything but 0 fails the build; -q still prints the summary line.
status=0
# shellcheck disable=SC2086 # PYTEST_ARGS is split on purpose
timeout -k 30 "${PYTEST_TIMEOUT:-900}" "$venv/bin/python" -m pytest -q -c "$here/pytest.ini" --rootdir "$here" -o cache_dir="$root/.cache/pytest-pyiceberg" "$here" ${PYTEST_ARGS:-} || status=$?
if [[ $status -eq 5 ]]; then
	echo "pyiceberg conformance: pytest collected no tests (exit 5)" >&2
elif [[ $status -eq 124 ]]; then
	echo "pyiceberg conformance: pytest did not finish within ${PYTEST_TIMEOUT:-900}s" >&2
elif [[ $status -ne 0 ]]; then
	echo "pyiceberg conformance: pytest failed (exit $status)" >&2
fi
exit "$status"
