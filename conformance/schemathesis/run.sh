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
# shellcheck source=../venv.sh
source "$here/../venv.sh"
floe_venv "schemathesis harness" venv-schemathesis "$here/requirements.txt"

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
