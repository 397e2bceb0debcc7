#!/usr/bin/env bash
# Fuzzes bin/floe (built by `make build`) with schemathesis against Apache
# Iceberg's REST catalog spec (rest-catalog-open-api.yaml); see run.py for
# what is run and what fails the run. Needs only python3 (3.10+) with pip.
#
# The virtualenv lives in .cache/venv-schemathesis (git-ignored) and is
# (re)built only when requirements.txt or the Python version changes: a
# stamp file inside it holds the hash of both. pip's download cache is
# .cache/pip, so nothing is cached outside the repository. Reports (JUnit,
# NDJSON) go to .cache/schemathesis-report.
#
# Environment: PYTHON (default python3), FLOE_BIN (default bin/floe),
# SCHEMATHESIS_MAX_TIME (seconds of fuzzing, default 180),
# SCHEMATHESIS_WORKERS (default 1), SCHEMATHESIS_SEED, SCHEMATHESIS_ARGS.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"
venv="$root/.cache/venv-schemathesis"
stamp="$venv/.floe-requirements.sha256"
requirements="$here/requirements.txt"

if ! command -v "$python" >/dev/null 2>&1; then
	echo "schemathesis harness: $python not found; install Python 3.10+ with pip" >&2
	exit 1
fi
"$python" - <<'PY' || exit 1
import sys
if sys.version_info < (3, 10):
    sys.exit(f"schemathesis harness: Python 3.10+ needed, {sys.executable} is {sys.version.split()[0]}")
PY

want="$( { "$python" -c 'import sys; print(sys.version)'; cat "$requirements"; } | sha256sum | cut -d' ' -f1)"

if [[ -x "$venv/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
	echo "schemathesis harness: virtualenv $venv is up to date"
else
	echo "schemathesis harness: creating $venv and installing requirements.txt"
	rm -rf "$venv"
	mkdir -p "$root/.cache"
	export PIP_CACHE_DIR="$root/.cache/pip" PIP_DISABLE_PIP_VERSION_CHECK=1
	if "$python" -m venv "$venv" 2>/dev/null && [[ -x "$venv/bin/pip" ]]; then
		pip=("$venv/bin/python" -m pip)
	else
		# Interpreters without ensurepip: a bare venv filled by the
		# interpreter's own pip.
		echo "schemathesis harness: venv has no pip; installing with $python -m pip --python"
		rm -rf "$venv"
		"$python" -m venv --without-pip "$venv"
		pip=("$python" -m pip --python "$venv/bin/python")
	fi
	"${pip[@]}" install --quiet --prefer-binary --no-input -r "$requirements"
	echo "$want" >"$stamp"
fi

export PYTHONDONTWRITEBYTECODE=1
export FLOE_BIN="${FLOE_BIN:-$root/bin/floe}"
cd "$root"
# The fuzzing budget plus start-up, shrinking and the final checks.
budget=$(( ${SCHEMATHESIS_MAX_TIME:-180} + 300 ))
status=0
timeout -k 30 "$budget" "$venv/bin/python" "$here/run.py" || status=$?
if [[ $status -eq 124 ]]; then
	echo "schemathesis harness: did not finish within ${budget}s" >&2
fi
exit "$status"
