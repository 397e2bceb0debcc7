#!/usr/bin/env bash
# Runs floe's Go tests that need a real S3 API (today: garbage collection
# end to end on an s3:// warehouse, gc/s3_test.go) against moto's
# standalone S3 server, started on a free loopback port for the run. moto
# comes from the PyIceberg suite's virtualenv (.cache/venv-pyiceberg,
# built by conformance/venv.sh from conformance/pyiceberg/requirements.txt),
# so nothing more is downloaded.
#
# Environment: PYTHON (default python3), GO (default go).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"
go="${GO:-go}"
# shellcheck source=../venv.sh
source "$here/../venv.sh"
floe_venv "s3 conformance" venv-pyiceberg "$root/conformance/pyiceberg/requirements.txt"

tmp="$(mktemp -d)"
moto_pid=""
cleanup() {
	if [[ -n "$moto_pid" ]]; then
		kill "$moto_pid" 2>/dev/null || true
		wait "$moto_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

port="$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
: >"$tmp/moto.log"
"$venv/bin/python" -m moto.server -H 127.0.0.1 -p "$port" >"$tmp/moto.log" 2>&1 &
moto_pid=$!
for _ in $(seq 1 300); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
		break
	fi
	if ! kill -0 "$moto_pid" 2>/dev/null; then
		echo "s3 conformance: moto_server exited:" >&2
		cat "$tmp/moto.log" >&2
		exit 1
	fi
	sleep 0.1
done
echo "s3 conformance: moto listening on 127.0.0.1:$port"

cd "$root"
FLOE_TEST_S3_ENDPOINT="http://127.0.0.1:$port" "$go" test -count=1 -v -run 'S3' ./gc/ | grep -E '^(=== RUN|--- |ok|FAIL|PASS)'
