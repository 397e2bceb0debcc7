#!/usr/bin/env bash
# Runs the Spark conformance suite against bin/floe (built by `make build`).
# Needs python3 (3.10+) with pip, Java 17+ and Maven 3.8+ (only to fetch the
# Iceberg runtime jar and the AWS bundle from Maven Central). Starts a
# signature-checking moto (conformance/s3/moto.sh) for test_s3_signing.py,
# and MinIO (conformance/s3/minio.sh, built with GO the first time) for
# test_s3_vended.py.
#
# The virtualenv lives in .cache/venv-spark (.cache/venv-spark41 for
# SPARK_LINE=4.1; git-ignored) and is (re)built only when the line's
# requirements file or the Python version changes: a stamp file inside it
# holds the hash of both. pip's download cache is .cache/pip and
# Maven's repository .cache/m2, so nothing is cached outside the repository.
#
# Environment: SPARK_LINE (4.0, the default: pyspark 4.0 from
# requirements.txt with Iceberg 1.10.2, venv .cache/venv-spark; or 4.1:
# pyspark 4.1 from requirements-4.1.txt with Iceberg 1.12.0, venv
# .cache/venv-spark41), PYTHON (default python3), FLOE_BIN (default
# bin/floe), MVN (default mvn), PYTEST_ARGS (extra pytest arguments, e.g.
# "-k merge -x", split with a shell's quoting rules), PYTEST_TIMEOUT
# (seconds the whole pytest run may take, default 1200).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"
mvn="${MVN:-mvn}"

# The Spark line: its pinned Python packages, its virtualenv and the Iceberg
# Spark runtime (Scala 2.13, from Maven Central) built for it. Iceberg 1.12
# publishes a runtime for Spark 4.1 only, 1.10 none for 4.1.
spark_line="${SPARK_LINE:-4.0}"
case "$spark_line" in
4.0) iceberg_version=1.10.2 aws_bundle_version=1.10.1 requirements=requirements.txt venv_name=venv-spark ;;
4.1) iceberg_version=1.12.0 aws_bundle_version=1.12.0 requirements=requirements-4.1.txt venv_name=venv-spark41 ;;
*)
	echo "spark conformance: SPARK_LINE must be 4.0 or 4.1, not $spark_line" >&2
	exit 1
	;;
esac
artifact="iceberg-spark-runtime-${spark_line}_2.13"
runtime="org.apache.iceberg:$artifact:$iceberg_version"
jar="$root/.cache/m2/org/apache/iceberg/$artifact/$iceberg_version/$artifact-$iceberg_version.jar"
# The AWS SDK that Iceberg's S3FileIO needs (test_s3_signing.py), which the
# runtime jar leaves out. Iceberg published no iceberg-aws-bundle 1.10.2:
# the 1.10 line takes 1.10.1's. The bundle holds the AWS SDK and its shaded
# dependencies only; Iceberg's S3FileIO itself is in the runtime jar.
bundle="org.apache.iceberg:iceberg-aws-bundle:$aws_bundle_version"
bundle_jar="$root/.cache/m2/org/apache/iceberg/iceberg-aws-bundle/$aws_bundle_version/iceberg-aws-bundle-$aws_bundle_version.jar"

for tool in java "$mvn"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "spark conformance: $tool not found; install Python 3.10+ with pip, Java 17+ and Maven 3.8+" >&2
		exit 1
	fi
done
# pyspark 4.0 and 4.1 run on Java 17 or later only.
java_major="$(java -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = \([0-9]*\).*/\1/p')"
if [[ -z "$java_major" || "$java_major" -lt 17 ]]; then
	echo "spark conformance: Java 17+ needed, java is ${java_major:-unknown}" >&2
	exit 1
fi

# shellcheck source=../venv.sh
source "$here/../venv.sh"
floe_venv "spark conformance" "$venv_name" "$here/$requirements" "pyspark is about 450 MB"

# fetch ARTIFACT JAR: ARTIFACT from Maven Central into .cache/m2, unless
# JAR is there.
fetch() {
	[[ -f "$2" ]] && return 0
	echo "spark conformance: fetching $1 into .cache/m2"
	local mvn_log
	mvn_log="$(mktemp)"
	if ! "$mvn" -q -B -Dstyle.color=never -Dmaven.repo.local="$root/.cache/m2" \
		org.apache.maven.plugins:maven-dependency-plugin:3.8.1:get -Dartifact="$1" -Dtransitive=false >"$mvn_log" 2>&1; then
		cat "$mvn_log" >&2
		rm -f "$mvn_log"
		echo "spark conformance: could not fetch $1" >&2
		exit 1
	fi
	rm -f "$mvn_log"
}
fetch "$runtime" "$jar"
fetch "$bundle" "$bundle_jar"

# Remote signing (test_s3_signing.py) needs an S3 server that checks
# signatures: conformance/s3/moto.sh starts moto from the PyIceberg
# suite's virtualenv (built here if `make test` has not yet).
spark_venv="$venv"
floe_venv "spark conformance" venv-pyiceberg "$root/conformance/pyiceberg/requirements.txt"
moto_python="$venv/bin/python"
venv="$spark_venv"
moto_logs="$(mktemp -d)"
moto_signing_pid=""
minio_pid=""
cleanup() {
	local pid
	for pid in $moto_signing_pid $minio_pid; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$moto_logs"
}
trap cleanup EXIT
# shellcheck source=../s3/moto.sh
source "$root/conformance/s3/moto.sh"
floe_moto_signing "spark conformance" "$moto_python" "$moto_logs"
export FLOE_TEST_S3_PYTHON="$moto_python"
# Vended credentials (test_s3_vended.py) need an S3 server that enforces
# STS session policies: MinIO, built from its Go module the first time
# (conformance/s3/minio.sh, shared with the s3 and Trino suites).
go="${GO:-go}"
# shellcheck source=../s3/minio.sh
source "$root/conformance/s3/minio.sh"
floe_minio_install "spark conformance"
floe_minio_start "spark conformance" "$moto_logs"

# No bytecode or pytest cache inside the source tree; pyspark uses the venv's
# interpreter for its Python workers.
export PYTHONDONTWRITEBYTECODE=1
export PYSPARK_PYTHON="$venv/bin/python" PYSPARK_DRIVER_PYTHON="$venv/bin/python"
export ICEBERG_SPARK_JAR="$jar" ICEBERG_AWS_BUNDLE_JAR="$bundle_jar"
export FLOE_BIN="${FLOE_BIN:-$root/bin/floe}"
floe_pytest "spark conformance" "pytest-${venv_name/venv-/}" 1200
