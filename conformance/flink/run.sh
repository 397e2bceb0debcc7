#!/usr/bin/env bash
# Runs the Flink conformance suite against bin/floe (built by `make build`).
# Needs Java 17+ and Maven 3.8+.
#
# Starts one floe in dev mode on a free loopback port over a temporary data
# directory and file:// warehouse, reads the bound address from its log,
# runs the JUnit suite (Flink SQL on a local MiniCluster inside Surefire's
# JVM, heap bounded in pom.xml), then stops floe with SIGTERM. Maven's
# local repository is .cache/m2 in the repository root (git-ignored): Flink
# 1.20.3's jars, Iceberg's Flink runtime and Hadoop's client come from
# Maven Central into it on the first run, about 200 MB.
#
# Environment: FLOE_BIN (default bin/floe), MVN (default mvn), MVN_ARGS
# (extra Maven arguments, e.g. "-Dtest=FlinkSqlTest#timeTravel"),
# FLINK_TIMEOUT (seconds for the whole Maven run, default 900).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
floe="${FLOE_BIN:-$root/bin/floe}"
mvn="${MVN:-mvn}"

# shellcheck source=../maven.sh
source "$here/../maven.sh"
maven_suite flink
start_floe floe --dev --data-dir "$tmp/data" --warehouse "file://$tmp/warehouse" --drain-delay 0s
echo "flink conformance: floe listening on $addr"

status=0
rm -rf "$root/.cache/flink-target/surefire-reports"
# java.io.tmpdir under $tmp: Flink's MiniCluster puts its blob store and
# spill files there, and they go with the run.
# shellcheck disable=SC2086 # MVN_ARGS is split on purpose
(cd "$here" && timeout -k 30 "${FLINK_TIMEOUT:-900}" "$mvn" -q -B -Dstyle.color=never -Dmaven.repo.local="$root/.cache/m2" test \
	-Dfloe.uri="http://$addr" -Dfloe.bin="$floe" -Dflink.tmpdir="$tmp" ${MVN_ARGS:-}) || status=$?
surefire_summary flink "$root/.cache/flink-target/surefire-reports"
if [[ $status -eq 124 ]]; then
	echo "flink conformance: Maven did not finish within ${FLINK_TIMEOUT:-900}s" >&2
elif [[ $status -ne 0 ]]; then
	echo "flink conformance: Maven failed (exit $status); floe's log:" >&2
	tail -n 30 "$tmp/floe.log" >&2
fi
exit "$status"
