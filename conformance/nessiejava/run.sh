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
pids=()
cleanup() {
	# SIGTERM, not SIGINT: a non-interactive shell starts background jobs
	# with SIGINT ignored, so a SIGINT sent before floe installs its handler
	# would be lost and the wait below would never end.
	for p in "${pids[@]}"; do
		if kill -0 "$p" 2>/dev/null; then
			kill -TERM "$p" 2>/dev/null || true
			wait "$p" 2>/dev/null || true
		fi
	done
	rm -rf "$tmp"
}
trap cleanup EXIT

# start NAME ARGS... runs floe serve with its data under $tmp/NAME and
# sets addr to the address it listens on.
start() {
	local name="$1"
	shift
	: >"$tmp/$name.log" # exists before the loop below reads it
	"$floe" serve --addr 127.0.0.1:0 --data-dir "$tmp/$name/data" --warehouse "$tmp/$name/warehouse" "$@" >"$tmp/$name.log" 2>&1 &
	local pid=$!
	pids+=("$pid")
	addr=""
	for _ in $(seq 1 100); do
		addr="$(sed -n 's/.*msg=listening addr=\([0-9.:]*\).*/\1/p' "$tmp/$name.log" | head -n1)"
		[[ -n "$addr" ]] && return 0
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "nessie-java conformance: floe ($name) exited early:" >&2
			cat "$tmp/$name.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	echo "nessie-java conformance: floe ($name) did not report its address:" >&2
	cat "$tmp/$name.log" >&2
	exit 1
}

start dev --dev
dev_addr="$addr"
echo "nessie-java conformance: floe listening on $dev_addr"

# Tokens for the secured server: random per run, stored only as hashes.
publisher_token="pub-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
ingest_token="ing-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
hash() { printf '%s' "$1" | sha256sum | cut -c1-64; }
mkdir -p "$tmp/secure"
printf '{"tokens":[{"sha256":"%s","principal":"pat","groups":["publishers"]},{"sha256":"%s","principal":"ingester","groups":["ingest"]}]}\n' \
	"$(hash "$publisher_token")" "$(hash "$ingest_token")" >"$tmp/secure/tokens.json"
start secure --auth-token-file "$tmp/secure/tokens.json"
secure_addr="$addr"

status=0
rm -rf "$root/.cache/nessiejava-target/surefire-reports"
# shellcheck disable=SC2086 # MVN_ARGS is split on purpose
(cd "$here" && "$mvn" -q -B -Dstyle.color=never -Dmaven.repo.local="$root/.cache/m2" test \
	-Dfloe.uri="http://$dev_addr/api/v2" -Dfloe.warehouse="file://$tmp/dev/warehouse" -Dfloe.secure.uri="http://$secure_addr/api/v2" \
	-Dfloe.token.publisher="$publisher_token" -Dfloe.token.ingest="$ingest_token" ${MVN_ARGS:-}) || status=$?
# Maven runs quietly; sum up Surefire's reports in one closing line.
reports=("$root"/.cache/nessiejava-target/surefire-reports/TEST-*.xml)
if [[ -e "${reports[0]}" ]]; then
	read -r tests failed skipped < <(sed -n 's/.*<testsuite [^>]*tests="\([0-9]*\)"[^>]*errors="\([0-9]*\)"[^>]*skipped="\([0-9]*\)"[^>]*failures="\([0-9]*\)".*/\1 \2 \3 \4/p' "${reports[@]}" |
		awk '{t+=$1; f+=$2+$4; s+=$3} END {print t+0, f+0, s+0}')
	echo "nessie-java: $((tests - failed - skipped)) passed, $failed failed, $skipped skipped"
fi
if [[ $status -ne 0 ]]; then
	echo "nessie-java conformance: Maven failed (exit $status); floe's logs:" >&2
	tail -n 30 "$tmp/dev.log" "$tmp/secure.log" >&2
fi
exit "$status"
