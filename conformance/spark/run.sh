#!/usr/bin/env bash
# Runs the Spark conformance suite against bin/floe (built by `make build`).
# Needs python3 (3.10+) with pip, Java 17+ and Maven 3.8+ (only to fetch the
# Iceberg runtime jar from Maven Central).
#
# The virtualenv lives in .cache/venv-spark (git-ignored) and is (re)built
# only when requirements.txt or the Python version changes: a stamp file
# inside it holds the hash of both. pip's download cache is .cache/pip and
# Maven's repository .cache/m2, so nothing is cached outside the repository.
#
# Environment: PYTHON (default python3), FLOE_BIN (default bin/floe), MVN
# (default mvn), PYTEST_ARGS (extra pytest arguments, e.g. "-k merge -x"),
# PYTEST_TIMEOUT (seconds the whole pytest run may take, default 1200).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"
mvn="${MVN:-mvn}"

# The Iceberg Spark runtime for Spark 4.0 and Scala 2.13, from Maven Central.
iceberg_version=1.10.2
runtime="org.apache.iceberg:iceberg-spark-runtime-4.0_2.13:$iceberg_version"
jar="$root/.cache/m2/org/apache/iceberg/iceberg-spark-runtime-4.0_2.13/$iceberg_version/iceberg-spark-runtime-4.0_2.13-$iceberg_version.jar"

for tool in java "$mvn"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "spark conformance: $tool not found; install Python 3.10+ with pip, Java 17+ and Maven 3.8+" >&2
		exit 1
	fi
done
# pyspark 4.0 runs on Java 17 or later only.
java_major="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = \([0-9]*\).*/\1/p')"
if [[ -z "$java_major" || "$java_major" -lt 17 ]]; then
	echo "spark conformance: Java 17+ needed, java is ${java_major:-unknown}" >&2
	exit 1
fi

# shellcheck source=../venv.sh
source "$here/../venv.sh"
floe_venv "spark conformance" venv-spark "$here/requirements.txt" "pyspark is about 450 MB"

if [[ ! -f "$jar" ]]; then
	echo "spark conformance: fetching $runtime into .cache/m2"
	mvn_log="$(mktemp)"
	if ! "$mvn" -q -B -Dstyle.color=never -Dmaven.repo.local="$root/.cache/m2" \
		org.apache.maven.plugins:maven-dependency-plugin:3.8.1:get -Dartifact="$runtime" -Dtransitive=false >"$mvn_log" 2>&1; then
		cat "$mvn_log" >&2
		rm -f "$mvn_log"
		echo "spark conformance: could not fetch $runtime" >&2
		exit 1
	fi
	rm -f "$mvn_log"
fi

# No bytecode or pytest cache inside the source tree; pyspark uses the venv's
# interpreter for its Python workers.
export PYTHONDONTWRITEBYTECODE=1
export PYSPARK_PYTHON="$venv/bin/python" PYSPARK_DRIVER_PYTHON="$venv/bin/python"
export ICEBERG_SPARK_JAR="$jar"
export FLOE_BIN="${FLOE_BIN:-$root/bin/floe}"
cd "$root"
# pytest's exit codes: 0 all passed, 1 some failed, 5 nothing collected.
# Anything but 0 fails the build; -q still prints the summary line.
status=0
# shellcheck disable=SC2086 # PYTEST_ARGS is split on purpose
timeout -k 30 "${PYTEST_TIMEOUT:-1200}" "$venv/bin/python" -m pytest -q -c "$here/pytest.ini" --rootdir "$here" -o cache_dir="$root/.cache/pytest-spark" "$here" ${PYTEST_ARGS:-} || status=$?
if [[ $status -eq 5 ]]; then
	echo "spark conformance: pytest collected no tests (exit 5)" >&2
elif [[ $status -eq 124 ]]; then
	echo "spark conformance: pytest did not finish within ${PYTEST_TIMEOUT:-1200}s" >&2
elif [[ $status -ne 0 ]]; then
	echo "spark conformance: pytest failed (exit $status)" >&2
fi
exit "$status"
