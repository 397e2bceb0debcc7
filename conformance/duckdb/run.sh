#!/usr/bin/env bash
# Runs the DuckDB conformance suite against bin/floe (built by `make
# build`). Needs only python3 (3.10+) with pip.
#
# The virtualenv lives in .cache/venv-duckdb (git-ignored) and is
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
# shellcheck source=../venv.sh
source "$here/../venv.sh"
floe_venv "duckdb conformance" venv-duckdb "$here/requirements.txt"

# No bytecode or pytest cache inside the source tree.
export PYTHONDONTWRITEBYTECODE=1
export FLOE_BIN="${FLOE_BIN:-$root/bin/floe}"
cd "$root"
# pytest's exit codes: 0 all passed, 1 some failed, 5 nothing collected.
# Anything but 0 fails the build; -q still prints the summary line.
status=0
# shellcheck disable=SC2086 # PYTEST_ARGS is split on purpose
timeout -k 30 "${PYTEST_TIMEOUT:-900}" "$venv/bin/python" -m pytest -q -c "$here/pytest.ini" --rootdir "$here" -o cache_dir="$root/.cache/pytest-duckdb" "$here" ${PYTEST_ARGS:-} || status=$?
if [[ $status -eq 5 ]]; then
	echo "duckdb conformance: pytest collected no tests (exit 5)" >&2
elif [[ $status -eq 124 ]]; then
	echo "duckdb conformance: pytest did not finish within ${PYTEST_TIMEOUT:-900}s" >&2
elif [[ $status -ne 0 ]]; then
	echo "duckdb conformance: pytest failed (exit $status)" >&2
fi
exit "$status"
