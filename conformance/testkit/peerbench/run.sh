#!/usr/bin/env bash
# Starts the servers of the peer benchmark, runs a command against them,
# then stops them:
#
#   bash conformance/testkit/peerbench/run.sh go test -run '^$' -bench . ./conformance/testkit/peerbench/
#
# - floe: bin/floe (built by `make build`) serving --dev on a free loopback
#   port over a temporary data directory, exactly as `make run` would.
# - Nessie: the nessie-quarkus runner jar from Maven Central, downloaded once
#   into .cache/peer/ (git-ignored) and checked against Maven Central's
#   SHA-1, run with `java -jar` (Java 21+: the 0.99.0 jar is built for it;
#   $JAVA, java on the PATH, then /usr/lib/jvm/*/bin/java, the first that is
#   new enough) on a free loopback port with the RocksDB
#   version store in a temporary directory (IN_MEMORY if RocksDB does not
#   start), everything else as shipped.
#
# The command gets FLOE_PEER_FLOE_URL and FLOE_PEER_NESSIE_URL, and
# FLOE_PEER_WAREHOUSE, floe's warehouse root URL; a server
# that could not start (no Java, failed download, ...) is left out with a
# message and the command still runs against the other one. Both servers
# are stopped on exit, failure included.
#
# Environment: FLOE_BIN (default bin/floe), JAVA (a java binary),
# NESSIE_VERSION (default 0.99.0, the newest runner jar on Maven Central),
# NESSIE_STORE (ROCKSDB or IN_MEMORY; default ROCKSDB with fallback),
# NESSIE_JAVA_OPTS (extra JVM options, e.g. -Xmx2g).
set -euo pipefail

if [[ $# -eq 0 ]]; then
	echo "usage: $0 COMMAND [ARG...]" >&2
	exit 2
fi

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
peers_label=peer
# shellcheck source=../peers.sh
source "$root/testkit/peers.sh"

tmp="$(mktemp -d)"
floe_pid=""
nessie_pid=""

cleanup() {
	stop "$nessie_pid" TERM
	stop "$floe_pid" INT
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "machine: $(machine_summary)"

# floe -----------------------------------------------------------------------
floe_url=""
if [[ ! -x "$floe" ]]; then
	say "floe: $floe not found (run make build); floe left out"
else
	start_floe "$tmp/floe.log" --dev --addr 127.0.0.1:0 --data-dir "$tmp/floe-data" --warehouse "$tmp/floe-warehouse"
	if [[ -n "$floe_addr" ]] && wait_http "http://$floe_addr/api/v2/config" 10 "$floe_pid"; then
		floe_url="http://$floe_addr"
		say "floe: $("$floe" version 2>/dev/null | head -n1 || echo unknown version), serve --dev, Pebble store in a temp dir (synced commits), at $floe_url"
	else
		say "floe: did not start; floe left out. Its log:"
		log_tail "$tmp/floe.log"
		stop "$floe_pid" INT
		floe_pid=""
	fi
fi

# Nessie ---------------------------------------------------------------------

# start_nessie starts the jar with store type $1 and waits for its API.
start_nessie() {
	local store="$1" port mport
	port="$(free_port)"
	mport="$(free_port)"
	local opts=(
		-Dquarkus.http.host=127.0.0.1
		-Dquarkus.http.port="$port"
		-Dquarkus.management.host=127.0.0.1
		-Dquarkus.management.port="$mport"
		-Dnessie.version.store.type="$store"
	)
	if [[ "$store" == ROCKSDB ]]; then
		opts+=(-Dnessie.version.store.persist.rocks.database-path="$tmp/nessie-rocksdb")
	fi
	# shellcheck disable=SC2086 # NESSIE_JAVA_OPTS is split on purpose
	"$java" ${NESSIE_JAVA_OPTS:-} "${opts[@]}" -jar "$jar_dir/$jar_name" >"$tmp/nessie-$store.log" 2>&1 &
	nessie_pid=$!
	if wait_http "http://127.0.0.1:$port/api/v2/config" 180 "$nessie_pid"; then
		nessie_url="http://127.0.0.1:$port"
		return 0
	fi
	say "nessie: did not start with $store. Its log:"
	log_tail "$tmp/nessie-$store.log"
	stop "$nessie_pid" TERM
	nessie_pid=""
	return 1
}

nessie_url=""
nessie_store=""
java=""
if ! java="$(find_java 21)"; then
	say "nessie: no Java 21+ found (set JAVA=/path/to/bin/java); Nessie left out"
elif ! fetch_jar; then
	say "nessie: could not download $jar_url; Nessie left out"
else
	jv="$("$java" -version 2>&1 | head -n1)"
	stores=(ROCKSDB IN_MEMORY)
	[[ -n "${NESSIE_STORE:-}" ]] && stores=("$NESSIE_STORE")
	for store in "${stores[@]}"; do
		if start_nessie "$store"; then
			nessie_store="$store"
			break
		fi
	done
	if [[ -n "$nessie_url" ]]; then
		case "$nessie_store" in
		# Nessie's RocksDB persist writes with RocksDB's default options:
		# through the WAL, without an fsync per write (floe syncs each batch).
		ROCKSDB) durability="in a temp dir, WAL not fsynced per write" ;;
		*) durability="not durable" ;;
		esac
		say "nessie: $nessie_version ($jar_name), version store $nessie_store ($durability), $jv, at $nessie_url"
	else
		say "nessie: did not start; Nessie left out"
	fi
fi

if [[ -z "$floe_url" && -z "$nessie_url" ]]; then
	say "no server started"
	exit 1
fi

status=0
FLOE_PEER_WAREHOUSE="file://$tmp/floe-warehouse" FLOE_PEER_FLOE_URL="$floe_url" FLOE_PEER_NESSIE_URL="$nessie_url" "$@" || status=$?
if [[ -n "$nessie_pid" ]] && ! kill -0 "$nessie_pid" 2>/dev/null; then
	say "nessie: exited during the run. Its log:"
	log_tail "$tmp/nessie-$nessie_store.log"
fi
exit "$status"
