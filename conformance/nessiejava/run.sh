#!/usr/bin/env bash
# Runs the Nessie Java client conformance suite against bin/floe (built by
# `make build`). Needs Java 17+ and Maven 3.8+.
#
# Starts two floe servers on free loopback ports over temporary
# directories: one in dev mode (-Dfloe.uri) and one with a token file and
# the default policy (-Dfloe.secure.uri, tokens in -Dfloe.token.*). Reads
# the bound addresses from their logs, runs the JUnit suite, then stops
# both with SIGINT. Maven's local repository is .cache/m2 in the
# repository root (git-ignored), so nothing is cached outside it.
#
# Environment: FLOE_BIN (default bin/floe), MVN (default mvn), MVN_ARGS
# (extra Maven arguments, e.g. "-Dtest=NessieClientTest#merge*").
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
floe="${FLOE_BIN:-$root/bin/floe}"
mvn="${MVN:-mvn}"

# shellcheck source=../maven.sh
source "$here/../maven.sh"
maven_suite nessie-java
start_floe dev --dev --data-dir "$tmp/dev/data" --warehouse "$tmp/dev/warehouse"
dev_addr="$addr"
echo "nessie-java conformance: floe listening on $dev_addr"

# Tokens for the secured server: random per run, stored only as hashes.
publisher_token="pub-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
ingest_token="ing-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
hash() { printf '%s' "$1" | sha256sum | cut -c1-64; }
mkdir -p "$tmp/secure"
printf '{"tokens":[{"sha256":"%s","principal":"pat","groups":["publishers"]},{"sha256":"%s","principal":"ingester","groups":["ingest"]}]}\n' \
	"$(hash "$publisher_token")" "$(hash "$ingest_token")" >"$tmp/secure/tokens.json"
start_floe secure --data-dir "$tmp/secure/data" --warehouse "$tmp/secure/warehouse" --auth-token-file "$tmp/secure/tokens.json"
secure_addr="$addr"

status=0
rm -rf "$root/.cache/nessiejava-target/surefire-reports"
# shellcheck disable=SC2086 # MVN_ARGS is split on purpose
(cd "$here" && "$mvn" -q -B -Dstyle.color=never -Dmaven.repo.local="$root/.cache/m2" test \
	-Dfloe.uri="http://$dev_addr/api/v2" -Dfloe.warehouse="file://$tmp/dev/warehouse" -Dfloe.secure.uri="http://$secure_addr/api/v2" \
	-Dfloe.token.publisher="$publisher_token" -Dfloe.token.ingest="$ingest_token" ${MVN_ARGS:-}) || status=$?
# Maven runs quietly; sum up Surefire's reports in one closing line.
surefire_summary nessie-java "$root/.cache/nessiejava-target/surefire-reports"
if [[ $status -ne 0 ]]; then
	echo "nessie-java conformance: Maven failed (exit $status); floe's logs:" >&2
	tail -n 30 "$tmp/dev.log" "$tmp/secure.log" >&2
fi
exit "$status"
