# Sourced by the Java conformance suites' run.sh scripts (flink,
# nessiejava, rck): one way to check the tools, to start floe servers on
# free loopback ports and stop them by PID, and to sum up Surefire's
# reports in one closing line.
#
# maven_suite LABEL checks that java and $mvn run and that $floe is built,
# makes the run's temporary directory $tmp and arranges for every server
# started with start_floe to be stopped, and $tmp removed, on exit. It
# expects floe (the binary) and mvn (the Maven command) to be set.
#
# start_floe NAME ARGS... runs `floe serve ARGS...` on 127.0.0.1 with its
# log at $tmp/NAME.log and sets addr to the address it reports.
#
# surefire_summary LABEL DIR [NOTE] prints "LABEL: N passed, N failed, N
# skipped[; NOTE]" from the reports in DIR, if there are any.

maven_suite() {
	label="$1"
	local tool
	for tool in java "$mvn"; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "$label conformance: $tool not found; install Java 17+ and Maven 3.8+" >&2
			exit 1
		fi
	done
	if [[ ! -x "$floe" ]]; then
		echo "$label conformance: $floe not found; run make build" >&2
		exit 1
	fi
	tmp="$(mktemp -d)"
	floe_pids=()
	trap maven_cleanup EXIT
}

maven_cleanup() {
	local p
	# SIGTERM, not SIGINT: a non-interactive shell starts background jobs
	# with SIGINT ignored, so a SIGINT sent before floe installs its
	# handler would be lost and the wait would never end.
	for p in "${floe_pids[@]}"; do
		if kill -0 "$p" 2>/dev/null; then
			kill -TERM "$p" 2>/dev/null || true
			wait "$p" 2>/dev/null || true
		fi
	done
	rm -rf "$tmp"
}

start_floe() {
	local name="$1"
	shift
	: >"$tmp/$name.log" # exists before the loop below reads it
	"$floe" serve --addr 127.0.0.1:0 "$@" >"$tmp/$name.log" 2>&1 &
	local pid=$!
	floe_pids+=("$pid")
	addr=""
	for _ in $(seq 1 100); do
		addr="$(sed -n 's/.*msg=listening addr=\([0-9.:]*\).*/\1/p' "$tmp/$name.log" | head -n1)"
		[[ -n "$addr" ]] && return 0
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "$label conformance: floe ($name) exited early:" >&2
			cat "$tmp/$name.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	echo "$label conformance: floe ($name) did not report its address:" >&2
	cat "$tmp/$name.log" >&2
	exit 1
}

surefire_summary() {
	local label="$1" dir="$2" note="${3:-}"
	local reports=("$dir"/TEST-*.xml)
	[[ -e "${reports[0]}" ]] || return 0
	local tests failed skipped
	read -r tests failed skipped < <(sed -n 's/.*<testsuite [^>]*tests="\([0-9]*\)"[^>]*errors="\([0-9]*\)"[^>]*skipped="\([0-9]*\)"[^>]*failures="\([0-9]*\)".*/\1 \2 \3 \4/p' "${reports[@]}" |
		awk '{t+=$1; f+=$2+$4; s+=$3} END {print t+0, f+0, s+0}')
	# Maven's quiet mode still prints colour resets without a newline;
	# start the summary on a line of its own.
	echo
	echo "$label: $((tests - failed - skipped)) passed, $failed failed, $skipped skipped${note:+; $note}"
}
