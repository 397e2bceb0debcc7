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
floe_pytest "duckdb conformance" pytest-duckdb 900
