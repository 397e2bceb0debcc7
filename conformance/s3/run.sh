#!/usr/bin/env bash
# Runs floe's Go tests that need a real S3 API (garbage collection end to
# end on an s3:// warehouse, housekeeping/gc/s3_test.go; remote signing checked by a
# server that verifies signatures, rest/icebergrest/sign_s3_test.go;
# vended credentials used against MinIO, which enforces their session
# policies, rest/icebergrest/credentials_s3_test.go) and
# PyIceberg through remote signing (test_pyiceberg_signing.py, with
# bin/floe) against moto's standalone S3 server, started on free loopback
# ports for the run. moto
# comes from the PyIceberg suite's virtualenv (.cache/venv-pyiceberg,
# built by conformance/venv.sh from conformance/pyiceberg/requirements.txt),
# so nothing more is downloaded.
#
# Environment: PYTHON (default python3), GO (default go), FLOE_BIN
# (default bin/floe).
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
moto_signing_pid=""
minio_pid=""
cleanup() {
	local pid
	for pid in $moto_pid $moto_signing_pid $minio_pid; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
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
FLOE_TEST_S3_ENDPOINT="http://127.0.0.1:$port" "$go" test -count=1 -v -run 'S3' ./housekeeping/gc/ | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|^ +--- FAIL|_test\.go:[0-9]+:'

# Remote signing (rest/icebergrest/sign_s3_test.go) needs a server that
# checks signatures: moto.sh starts one (shared with the Spark suite).
# shellcheck source=moto.sh
source "$here/moto.sh"
floe_moto_signing "s3 conformance" "$venv/bin/python" "$tmp"
"$go" test -count=1 -v -run 'S3RemoteSigning' ./rest/icebergrest/ | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|^ +--- FAIL|_test\.go:[0-9]+:'

# Vended credentials (rest/icebergrest/credentials_s3_test.go; iceberg-go
# through them, conformance/icebergo/vended_s3_test.go) need a
# server that enforces STS session policies, which moto does not: MinIO,
# built from its Go module the first time (minio.sh).
# The refresh of vended credentials is tested twice: at floe's reuse
# horizon with floe's clock moved (TestS3VendedCredentialsRefresh, every
# run), and past a real expiry (TestS3VendedCredentialsOutliveExpiry,
# conformance/icebergo: iceberg-go handles outliving their first
# credentials), which waits 16 minutes because STS vends nothing shorter
# than 15: it runs only with FLOE_TEST_VEND_EXPIRY=1, hence the timeout.
# shellcheck source=minio.sh
source "$here/minio.sh"
floe_minio_install "s3 conformance"
floe_minio_start "s3 conformance" "$tmp"
"$go" test -count=1 -timeout 30m -v -run 'S3VendedCredentials|VendAgainstMinIO' ./rest/icebergrest/ ./conformance/icebergo/ ./iceberg/s3vend/ | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|^ +--- FAIL|_test\.go:[0-9]+:'

# PyIceberg through the same signer (test_pyiceberg_signing.py) and
# through vended credentials on MinIO (test_pyiceberg_vended.py): its own venv (see
# requirements-pyiceberg-signing.txt), the floe binary `make test` built.
moto_venv="$venv"
floe_venv "s3 conformance" venv-pyiceberg-signing "$here/requirements-pyiceberg-signing.txt"
cd "$here"
FLOE_BIN="${FLOE_BIN:-$root/bin/floe}" "$venv/bin/python" -m pytest -q -p no:cacheprovider
venv="$moto_venv"
