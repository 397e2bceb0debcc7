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

# shellcheck source=../maven.sh
source "$here/../maven.sh"
maven_suite rck
start_floe floe --dev --data-dir "$tmp/data" --warehouse "file://$tmp/warehouse" --allowed-location file:/tmp --drain-delay 0s
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
surefire_summary rck "$root/.cache/rck-target/surefire-reports" "$known known failures not run"
if [[ $status -ne 0 ]]; then
	echo "rck conformance: Maven failed (exit $status); floe's log:" >&2
	tail -n 30 "$tmp/floe.log" >&2
fi
exit "$status"
