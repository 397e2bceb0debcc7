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

for tool in java "$mvn"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "flink conformance: $tool not found; install Java 17+ and Maven 3.8+" >&2
		exit 1
	fi
done
if [[ ! -x "$floe" ]]; then
	echo "flink conformance: $floe not found; run make build" >&2
	exit 1
fi

tmp="$(mktemp -d)"
pid=""
cleanup() {
	if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
		# SIGTERM: background jobs of a non-interactive shell start with
		# SIGINT ignored, so an early SIGINT could be lost.
		kill -TERM "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

: >"$tmp/floe.log" # exists before the loop below reads it
"$floe" serve --dev --addr 127.0.0.1:0 --data-dir "$tmp/data" --warehouse "file://$tmp/warehouse" --drain-delay 0s >"$tmp/floe.log" 2>&1 &
pid=$!
addr=""
for _ in $(seq 1 100); do
	addr="$(sed -n 's/.*msg=listening addr=\([0-9.:]*\).*/\1/p' "$tmp/floe.log" | head -n1)"
	[[ -n "$addr" ]] && break
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "flink conformance: floe exited early:" >&2
		cat "$tmp/floe.log" >&2
		exit 1
	fi
	sleep 0.1
done
if [[ -z "$addr" ]]; then
	echo "flink conformance: floe did not report its address:" >&2
	cat "$tmp/floe.log" >&2
	exit 1
fi
echo "flink conformance: floe listening on $addr"

status=0
rm -rf "$root/.cache/flink-target/surefire-reports"
# java.io.tmpdir under $tmp: Flink's MiniCluster puts its blob store and
# spill files there, and they go with the run.
# shellcheck disable=SC2086 # MVN_ARGS is split on purpose
(cd "$here" && timeout -k 30 "${FLINK_TIMEOUT:-900}" "$mvn" -q -B -Dstyle.color=never -Dmaven.repo.local="$root/.cache/m2" test \
	-Dfloe.uri="http://$addr" -Dfloe.bin="$floe" -Dflink.tmpdir="$tmp" ${MVN_ARGS:-}) || status=$?
reports=("$root"/.cache/flink-target/surefire-reports/TEST-*.xml)
if [[ -e "${reports[0]}" ]]; then
	read -r tests failed skipped < <(sed -n 's/.*<testsuite [^>]*tests="\([0-9]*\)"[^>]*errors="\([0-9]*\)"[^>]*skipped="\([0-9]*\)"[^>]*failures="\([0-9]*\)".*/\1 \2 \3 \4/p' "${reports[@]}" |
		awk '{t+=$1; f+=$2+$4; s+=$3} END {print t+0, f+0, s+0}')
	echo
	echo "flink: $((tests - failed - skipped)) passed, $failed failed, $skipped skipped"
fi
if [[ $status -eq 124 ]]; then
	echo "flink conformance: Maven did not finish within ${FLINK_TIMEOUT:-900}s" >&2
elif [[ $status -ne 0 ]]; then
	echo "flink conformance: Maven failed (exit $status); floe's log:" >&2
	tail -n 30 "$tmp/floe.log" >&2
fi
exit "$status"
