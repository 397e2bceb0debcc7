#!/usr/bin/env bash
# Runs the Nessie Java client conformance suite against bin/floe (built by
# `make build`). Needs Java 17+ and Maven 3.8+.
#
# Starts floe on a free loopback port over temporary directories, reads the
# bound address from its log, runs the JUnit suite with -Dfloe.uri, then
# stops floe with SIGINT. Maven's local repository is .cache/m2 in the
# repository root (git-ignored), so nothing is cached outside it.
#
# Environment: FLOE_BIN (default bin/floe), MVN (default mvn), MVN_ARGS
# (extra Maven arguments, e.g. "-Dtest=NessieClientTest#merge*").
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
floe="${FLOE_BIN:-$root/bin/floe}"
mvn="${MVN:-mvn}"

for tool in java "$mvn"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "nessie-java conformance: $tool not found; install Java 17+ and Maven 3.8+" >&2
		exit 1
	fi
done
if [[ ! -x "$floe" ]]; then
	echo "nessie-java conformance: $floe not found; run make build" >&2
	exit 1
fi

tmp="$(mktemp -d)"
pid=""
cleanup() {
	if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
		kill -INT "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

"$floe" serve --dev --addr 127.0.0.1:0 --data-dir "$tmp/data" --warehouse "$tmp/warehouse" >"$tmp/floe.log" 2>&1 &
pid=$!

addr=""
for _ in $(seq 1 100); do
	addr="$(sed -n 's/.*msg=listening addr=\([0-9.:]*\).*/\1/p' "$tmp/floe.log" | head -n1)"
	[[ -n "$addr" ]] && break
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "nessie-java conformance: floe exited early:" >&2
		cat "$tmp/floe.log" >&2
		exit 1
	fi
	sleep 0.1
done
if [[ -z "$addr" ]]; then
	echo "nessie-java conformance: floe did not report its address:" >&2
	cat "$tmp/floe.log" >&2
	exit 1
fi
echo "nessie-java conformance: floe listening on $addr"

status=0
rm -rf "$root/.cache/nessiejava-target/surefire-reports"
# shellcheck disable=SC2086 # MVN_ARGS is split on purpose
(cd "$here" && "$mvn" -q -B -Dstyle.color=never -Dmaven.repo.local="$root/.cache/m2" test \
	-Dfloe.uri="http://$addr/api/v2" ${MVN_ARGS:-}) || status=$?
# Maven runs quietly; sum up Surefire's reports in one closing line.
reports=("$root"/.cache/nessiejava-target/surefire-reports/TEST-*.xml)
if [[ -e "${reports[0]}" ]]; then
	read -r tests failed skipped < <(sed -n 's/.*<testsuite [^>]*tests="\([0-9]*\)"[^>]*errors="\([0-9]*\)"[^>]*skipped="\([0-9]*\)"[^>]*failures="\([0-9]*\)".*/\1 \2 \3 \4/p' "${reports[@]}" |
		awk '{t+=$1; f+=$2+$4; s+=$3} END {print t+0, f+0, s+0}')
	echo "nessie-java: $((tests - failed - skipped)) passed, $failed failed, $skipped skipped"
fi
if [[ $status -ne 0 ]]; then
	echo "nessie-java conformance: Maven failed (exit $status); floe's log:" >&2
	tail -n 50 "$tmp/floe.log" >&2
fi
exit "$status"
