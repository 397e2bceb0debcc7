#!/usr/bin/env bash
# The peer benchmark on the Iceberg REST path (`make bench-peers`): starts
# floe and two peers on loopback, drives all three with one Go client
# (go run ./conformance/testkit/icebergpeers), then stops them:
#
# - floe: bin/floe (built by `make build`) serving --dev over a Pebble store
#   in a temporary directory and a file:// warehouse beside it.
# - reference: Apache Iceberg's RESTCatalogServer (iceberg-open-api 1.11.0
#   test-fixtures, Jetty 12) through refserver/'s PeerBenchLauncher, bound
#   to 127.0.0.1, over a JdbcCatalog on a sqlite-jdbc file and a file://
#   warehouse. Maven builds the launcher into .cache/ (Java 17+).
# - nessie: the nessie-quarkus 0.99.0 runner jar (the one
#   conformance/testkit/peerbench/run.sh uses, cached in .cache/peer/; Java 21+), its
#   /iceberg endpoint, with the RocksDB version store and its warehouse in
#   a bucket of moto's S3-compatible server (moto[server] from PyPI in the
#   virtualenv .cache/icebergpeers-venv), since Nessie refuses file://
#   warehouses.
#
# A server that cannot start is left out with a message; the others still
# run. Everything is stopped on exit, failure included.
#
# Environment: ICEBERGPEERS_STEP (each timed step, default 10s),
# ICEBERGPEERS_RUNS (alternated runs, default 3), ICEBERGPEERS_FLOE_S3=1
# (also a second floe with its warehouse on moto's S3, as floe-s3),
# ICEBERGPEERS_ARGS (more flags for the Go program), FLOE_BIN, JAVA (for Nessie, 21+), MVN,
# NESSIE_VERSION (default 0.99.0).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
cache="$root/.cache"
peers_label=peers
# shellcheck source=../peers.sh
source "$root/testkit/peers.sh"

tmp="$(mktemp -d)"
pids=()
cleanup() {
	local pid
	for pid in "${pids[@]}"; do stop "$pid" TERM; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "machine: $(machine_summary); load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"

peer_args=()

# floe -----------------------------------------------------------------------
if [[ ! -x "$floe" ]]; then
	say "floe: $floe not found (run make build); floe left out"
else
	start_floe "$tmp/floe.log" --dev --addr 127.0.0.1:0 --data-dir "$tmp/floe-data" --warehouse "$tmp/floe-warehouse"
	pids+=("$floe_pid")
	addr="$floe_addr"
	if [[ -n "$addr" ]] && wait_http "http://$addr/v1/config?warehouse=lake" 10 "$floe_pid"; then
		say "floe: $("$floe" version 2>/dev/null | head -n1 || echo unknown version) at http://$addr; durability: each commit is in a Pebble batch synced (fsync) before it is acknowledged; metadata.json and manifest lists on the local file:// warehouse"
		peer_args+=(-peer "name=floe,url=http://$addr,warehouse=lake,pid=$floe_pid")
	else
		say "floe: did not start; left out. Its log:"
		log_tail "$tmp/floe.log"
	fi
fi

# The reference server --------------------------------------------------------
ref_java=""
if ! ref_java="$(find_java 17)"; then
	say "reference: no Java 17+ found; left out"
elif ! command -v "${MVN:-mvn}" >/dev/null; then
	say "reference: Maven (mvn) not found; left out"
else
	target="$cache/icebergpeers-refserver"
	if [[ ! -f "$target/classpath.txt" || "$here/refserver/pom.xml" -nt "$target/classpath.txt" || -n "$(find "$here/refserver/src" -newer "$target/classpath.txt" -print -quit)" ]]; then
		say "reference: building the launcher with Maven (first time: downloads about 100 MB into .cache/m2)"
		"${MVN:-mvn}" -B -q -f "$here/refserver/pom.xml" -Dmaven.repo.local="$cache/m2" \
			compile dependency:build-classpath -Dmdep.outputFile="$target/classpath.txt" >"$tmp/mvn.log" 2>&1 ||
			{ say "reference: Maven failed:"; log_tail "$tmp/mvn.log"; rm -f "$target/classpath.txt"; }
	fi
	if [[ -f "$target/classpath.txt" ]]; then
		port="$(free_port)"
		mkdir -p "$tmp/ref-warehouse"
		"$ref_java" -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$target/classes:$(cat "$target/classpath.txt")" \
			org.apache.iceberg.rest.PeerBenchLauncher "$port" "file://$tmp/ref-warehouse" "jdbc:sqlite:$tmp/ref-catalog.db" >"$tmp/ref.log" 2>&1 &
		ref_pid=$!
		pids+=("$ref_pid")
		if wait_http "http://127.0.0.1:$port/v1/config" 120 "$ref_pid"; then
			say "reference: Apache Iceberg RESTCatalogServer 1.11.0 (JdbcCatalog on sqlite-jdbc 3.50.3.0, Jetty 12.1.14), $("$ref_java" -version 2>&1 | head -n1), at http://127.0.0.1:$port; durability: the catalog pointer is a SQLite transaction in rollback-journal mode with synchronous=FULL (sqlite-jdbc's defaults), fsynced per commit; metadata.json written through Hadoop's local file system, not fsynced"
			peer_args+=(-peer "name=reference,url=http://127.0.0.1:$port,pid=$ref_pid")
		else
			say "reference: did not start; left out. Its log:"
			log_tail "$tmp/ref.log"
		fi
	fi
fi

# moto and Nessie ---------------------------------------------------------------
s3=""
nessie_java=""
if ! nessie_java="$(find_java 21)"; then
	say "nessie: no Java 21+ found (set JAVA=/path/to/bin/java); left out"
elif ! fetch_jar; then
	say "nessie: could not download $jar_url; left out"
else
	python="${PYTHON:-python3}"
	# shellcheck source=../../../conformance/venv.sh
	source "$root/conformance/venv.sh"
	floe_venv peers icebergpeers-venv "$here/requirements.txt" "moto's server with boto3: about 300 MB installed"
	mport="$(free_port)"
	"$venv/bin/moto_server" -H 127.0.0.1 -p "$mport" >"$tmp/moto.log" 2>&1 &
	moto_pid=$!
	pids+=("$moto_pid")
	if ! wait_http "http://127.0.0.1:$mport/moto-api/" 60 "$moto_pid" ||
		! curl -fsS -o /dev/null -X PUT "http://127.0.0.1:$mport/peerbench"; then
		say "nessie: moto did not start; left out. Its log:"
		log_tail "$tmp/moto.log"
	else
		s3="http://127.0.0.1:$mport"
		port="$(free_port)"
		mgmt="$(free_port)"
		"$nessie_java" ${NESSIE_JAVA_OPTS:-} \
			-Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
			-Dquarkus.management.host=127.0.0.1 -Dquarkus.management.port="$mgmt" \
			-Dquarkus.log.level=WARN \
			-Dnessie.version.store.type=ROCKSDB \
			-Dnessie.version.store.persist.rocks.database-path="$tmp/nessie-rocksdb" \
			-Dnessie.catalog.default-warehouse=warehouse \
			-Dnessie.catalog.warehouses.warehouse.location=s3://peerbench/warehouse \
			-Dnessie.catalog.service.s3.default-options.endpoint="$s3/" \
			-Dnessie.catalog.service.s3.default-options.path-style-access=true \
			-Dnessie.catalog.service.s3.default-options.region=us-east-1 \
			-Dnessie.catalog.service.s3.default-options.access-key=urn:nessie-secret:quarkus:peerbench.s3 \
			-Dpeerbench.s3.name=peerbench -Dpeerbench.s3.secret=peerbench \
			-jar "$jar_dir/$jar_name" >"$tmp/nessie.log" 2>&1 &
		nessie_pid=$!
		pids+=("$nessie_pid")
		if wait_http "http://127.0.0.1:$port/iceberg/v1/config" 180 "$nessie_pid"; then
			say "nessie: $nessie_version ($jar_name), $("$nessie_java" -version 2>&1 | head -n1), /iceberg at http://127.0.0.1:$port, warehouse s3://peerbench/warehouse on moto $("$venv/bin/python" -c 'import moto; print(moto.__version__)') at $s3; durability: RocksDB version store with RocksDB's default write options (WAL written, not fsynced per commit); moto keeps objects in memory"
			peer_args+=(-peer "name=nessie,url=http://127.0.0.1:$port/iceberg,warehouse=warehouse,pid=$nessie_pid,store-pid=$moto_pid")
		else
			say "nessie: did not start; left out. Its log:"
			log_tail "$tmp/nessie.log"
		fi
	fi
fi

# floe on moto's S3 too (ICEBERGPEERS_FLOE_S3=1), beside Nessie on the same
# store: the comparison without the local disk's advantage.
if [[ "${ICEBERGPEERS_FLOE_S3:-0}" == 1 && -n "$s3" && -x "$floe" ]]; then
	start_floe "$tmp/floe-s3.log" --dev --addr 127.0.0.1:0 --data-dir "$tmp/floe-s3-data" --warehouse s3://peerbench/floe \
		--s3-endpoint "$s3" --s3-region us-east-1 --s3-path-style \
		--s3-access-key-id peerbench --s3-secret-access-key peerbench
	floe_s3_pid="$floe_pid"
	pids+=("$floe_s3_pid")
	addr="$floe_addr"
	if [[ -n "$addr" ]] && wait_http "http://$addr/v1/config?warehouse=lake" 10 "$floe_s3_pid"; then
		say "floe-s3: the same floe at http://$addr with its warehouse at s3://peerbench/floe on the moto server Nessie uses; durability: commits synced in Pebble as above, metadata.json on moto (in memory)"
		peer_args+=(-peer "name=floe-s3,url=http://$addr,warehouse=lake,pid=$floe_s3_pid,store-pid=$moto_pid")
	else
		say "floe-s3: did not start; left out. Its log:"
		log_tail "$tmp/floe-s3.log"
	fi
fi

if [[ ${#peer_args[@]} -eq 0 ]]; then
	say "no server started"
	exit 1
fi

cd "$root"
# shellcheck disable=SC2086 # ICEBERGPEERS_ARGS is split on purpose
go run ./conformance/testkit/icebergpeers "${peer_args[@]}" -s3 "$s3" \
	-step "${ICEBERGPEERS_STEP:-10s}" -runs "${ICEBERGPEERS_RUNS:-3}" ${ICEBERGPEERS_ARGS:-}
