#!/usr/bin/env bash
# Runs Apache Iceberg's REST Compatibility Kit (RCK) against bin/floe (built
# by `make build`). Needs Java 17+ and Maven 3.8+.
#
# Starts one floe in dev mode on a free loopback port over a temporary data
# directory and file:// warehouse, reads the bound address from its log,
# runs the RCK's JUnit classes from iceberg-open-api's `tests` jar with the
# catalog configuration as system properties (the RCK puts every system
# property into its RESTCatalog's configuration), then stops floe with
# SIGINT. Maven's local repository is .cache/m2 in the repository root
# (git-ignored), so nothing is cached outside it.
#
# The tests floe is known to fail are listed in known-failures.txt and not
# run, so any other failure fails the build.
#
# Environment: FLOE_BIN (default bin/floe), MVN (default mvn), RCK_ALL (set:
# run the known failures too), MVN_ARGS (extra Maven arguments, e.g.
# "-Dtest=RESTCompatibilityKitCatalogTests#testRename*").
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
floe="${FLOE_BIN:-$root/bin/floe}"
mvn="${MVN:-mvn}"

for tool in java "$mvn"; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "rck conformance: $tool not found; install Java 17+ and Maven 3.8+" >&2
		exit 1
	fi
done
if [[ ! -x "$floe" ]]; then
	echo "rck conformance: $floe not found; run make build" >&2
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
"$floe" serve --dev --addr 127.0.0.1:0 --data-dir "$tmp/data" --warehouse "file://$tmp/warehouse" --allowed-location file:/tmp --drain-delay 0s >"$tmp/floe.log" 2>&1 &
pid=$!
addr=""
for _ in $(seq 1 100); do
	addr="$(sed -n 's/.*msg=listening addr=\([0-9.:]*\).*/\1/p' "$tmp/floe.log" | head -n1)"
	[[ -n "$addr" ]] && break
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "rck conformance: floe exited early:" >&2
		cat "$tmp/floe.log" >&2
		exit 1
	fi
	sleep 0.1
done
if [[ -z "$addr" ]]; then
	echo "rck conformance: floe did not report its address:" >&2
	cat "$tmp/floe.log" >&2
	exit 1
fi
echo "rck conformance: floe listening on $addr"

# RCK_ALL=1 runs the known failures too.
excludes="$here/known-failures.txt"
if [[ -n "${RCK_ALL:-}" ]]; then
	excludes="$tmp/no-excludes.txt"
	: >"$excludes"
fi
known="$(grep -cv '^\(#\|$\)' "$excludes" || true)"

status=0
rm -rf "$root/.cache/rck-target/surefire-reports"
# rck.local=false: use the server at uri, not the RCK's own in-process one.
# shellcheck disable=SC2086 # MVN_ARGS is split on purpose
(cd "$here" && "$mvn" -q -B -Dstyle.color=never -Dmaven.repo.local="$root/.cache/m2" test \
	-Drck.local=false -Duri="http://$addr/" -Dwarehouse=lake \
	-Drck.requires-namespace-create=true -Drck.supports-names-with-dot=true \
	-Drck.excludes="$excludes" ${MVN_ARGS:-}) || status=$?
reports=("$root"/.cache/rck-target/surefire-reports/TEST-*.xml)
if [[ -e "${reports[0]}" ]]; then
	read -r tests failed skipped < <(sed -n 's/.*<testsuite [^>]*tests="\([0-9]*\)"[^>]*errors="\([0-9]*\)"[^>]*skipped="\([0-9]*\)"[^>]*failures="\([0-9]*\)".*/\1 \2 \3 \4/p' "${reports[@]}" |
		awk '{t+=$1; f+=$2+$4; s+=$3} END {print t+0, f+0, s+0}')
	# Maven's quiet mode still prints colour resets without a newline;
	# start the summary on a line of its own.
	echo
	echo "rck: $((tests - failed - skipped)) passed, $failed failed, $skipped skipped; $known known failures not run"
fi
if [[ $status -ne 0 ]]; then
	echo "rck conformance: Maven failed (exit $status); floe's log:" >&2
	tail -n 30 "$tmp/floe.log" >&2
fi
exit "$status"
