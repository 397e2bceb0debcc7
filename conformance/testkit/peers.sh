# Sourced by the peer benchmarks' run.sh scripts (conformance/testkit/peerbench,
# conformance/testkit/icebergpeers): one way to start floe, to find Java, to fetch the
# Nessie runner jar and to wait for and stop the servers they start.
#
# It expects root (the repository) and peers_label (the word that starts every
# message: "peer" or "peers") to be set, and sets floe (FLOE_BIN, default
# bin/floe), nessie_version (NESSIE_VERSION, default 0.99.0, the newest
# runner jar on Maven Central), jar_name, jar_url and jar_dir (.cache/peer,
# git-ignored, where the jar is kept).

floe="${FLOE_BIN:-$root/bin/floe}"
nessie_version="${NESSIE_VERSION:-0.99.0}"
jar_name="nessie-quarkus-$nessie_version-runner.jar"
jar_url="https://repo.maven.apache.org/maven2/org/projectnessie/nessie/nessie-quarkus/$nessie_version/$jar_name"
jar_dir="$root/.cache/peer"

say() { echo "$peers_label: $*"; }

# log_tail prints the last lines of log file $1, indented under a message.
log_tail() { tail -n 20 "$1" | sed "s/^/$peers_label:   /"; }

# machine_summary prints the CPUs, memory and kernel of this machine.
machine_summary() {
	echo "$(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1), $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -sr)"
}

# stop sends signal $2 to pid $1 (none when empty), waits up to 20 s, then
# kills it.
stop() {
	local pid="$1" sig="$2"
	[[ -n "$pid" ]] || return 0
	kill -0 "$pid" 2>/dev/null || return 0
	kill "-$sig" "$pid" 2>/dev/null || true
	for _ in $(seq 1 200); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# wait_http waits up to $2 seconds for a 2xx from URL $1 while pid $3 lives.
wait_http() {
	local url="$1" secs="$2" pid="$3"
	for _ in $(seq 1 $((secs * 10))); do
		curl -fsS -o /dev/null --max-time 2 "$url" 2>/dev/null && return 0
		kill -0 "$pid" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# find_java MAJOR prints the first java binary of that major version or
# newer: $JAVA, java on the PATH, then /usr/lib/jvm/*/bin/java.
find_java() {
	local want="$1" j major
	for j in ${JAVA:-} "$(command -v java || true)" /usr/lib/jvm/*/bin/java; do
		[[ -n "$j" && -x "$j" ]] || continue
		major="$("$j" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)"
		if [[ -n "$major" && "$major" -ge "$want" ]]; then
			echo "$j"
			return 0
		fi
	done
	return 1
}

# start_floe LOG ARG... starts "$floe serve ARG..." in the background with
# its output in LOG and waits up to 10 s for the address it says it
# listens on. It sets floe_pid, and floe_addr (empty if floe said none).
start_floe() {
	local log="$1"
	shift
	# Created before floe starts: the loop's first sed could otherwise run
	# before the background job opened it, and a failed sed ends a caller
	# under set -e -o pipefail.
	: >"$log"
	"$floe" serve "$@" >"$log" 2>&1 &
	floe_pid=$!
	floe_addr=""
	for _ in $(seq 1 100); do
		floe_addr="$(sed -n 's/.*msg=listening addr=\([0-9.:]*\).*/\1/p' "$log" | head -n1)"
		[[ -n "$floe_addr" ]] && break
		kill -0 "$floe_pid" 2>/dev/null || break
		sleep 0.1
	done
	return 0
}

# fetch_jar downloads the Nessie runner jar once into jar_dir; it lands
# under its final name only after its SHA-1 matched Maven Central's, so a
# present jar is a verified one.
fetch_jar() {
	local jar="$jar_dir/$jar_name"
	[[ -f "$jar" ]] && return 0
	mkdir -p "$jar_dir"
	say "nessie: downloading $jar_url (about 245 MB) into $jar_dir"
	local want got
	want="$(curl -fsSL --retry 3 "$jar_url.sha1" | awk '{print $1}')" || return 1
	curl -fsSL --retry 3 -o "$jar.part" "$jar_url" || { rm -f "$jar.part"; return 1; }
	got="$(sha1sum "$jar.part" | awk '{print $1}')"
	if [[ -z "$want" || "$got" != "$want" ]]; then
		say "nessie: SHA-1 mismatch for $jar_name: got $got, Maven Central says $want"
		rm -f "$jar.part"
		return 1
	fi
	mv "$jar.part" "$jar"
}
