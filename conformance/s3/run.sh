#!/usr/bin/env bash
# Runs floe's Go tests that need a real S3 API (garbage collection end to
# end on an s3:// warehouse, gc/s3_test.go; remote signing checked by a
# server that verifies signatures, rest/icebergrest/sign_s3_test.go)
# against moto's standalone S3 server, started on a free loopback port
# for the run. moto
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

# Remote signing (rest/icebergrest/sign_s3_test.go) needs a server that
# checks signatures. moto does only with INITIAL_NO_AUTH_ACTION_COUNT set,
# against the keys of an IAM user it made: the first three requests (make
# the user, its key, its policy) go unchecked, every later one is.
sport="$("$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
INITIAL_NO_AUTH_ACTION_COUNT=3 "$venv/bin/python" -m moto.server -H 127.0.0.1 -p "$sport" >"$tmp/moto-signing.log" 2>&1 &
signing_pid=$!
trap 'kill "$signing_pid" 2>/dev/null || true; wait "$signing_pid" 2>/dev/null || true; cleanup' EXIT
for _ in $(seq 1 300); do
	if (exec 3<>"/dev/tcp/127.0.0.1/$sport") 2>/dev/null; then
		break
	fi
	sleep 0.1
done
keys="$("$venv/bin/python" - "http://127.0.0.1:$sport" <<'PY'
import json, sys
import boto3
iam = boto3.client("iam", endpoint_url=sys.argv[1], region_name="us-east-1", aws_access_key_id="setup", aws_secret_access_key="setup")
iam.create_user(UserName="floe")
key = iam.create_access_key(UserName="floe")["AccessKey"]
iam.put_user_policy(UserName="floe", PolicyName="s3", PolicyDocument=json.dumps(
    {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}))
print(key["AccessKeyId"], key["SecretAccessKey"])
PY
)"
echo "s3 conformance: signature-checking moto listening on 127.0.0.1:$sport"
FLOE_TEST_S3_SIGNING_ENDPOINT="http://127.0.0.1:$sport" FLOE_TEST_S3_ACCESS_KEY_ID="${keys% *}" FLOE_TEST_S3_SECRET_ACCESS_KEY="${keys#* }" \
	"$go" test -count=1 -v -run 'S3RemoteSigning' ./rest/icebergrest/ | grep -E '^(=== RUN|--- |ok|FAIL|PASS)'

# PyIceberg through the same signer: its own venv (see
# requirements-pyiceberg-signing.txt), the floe binary `make test` built.
# Opt-in (FLOE_S3_PYICEBERG_SIGNING=1) until an intermittent 403 that
# moto answers to some of PyIceberg's signed HEAD requests is understood
# (conformance/s3/README.md).
if [[ "${FLOE_S3_PYICEBERG_SIGNING:-}" != 1 ]]; then
	echo "s3 conformance: PyIceberg signing test skipped (FLOE_S3_PYICEBERG_SIGNING=1 runs it)"
	exit 0
fi
moto_venv="$venv"
floe_venv "s3 conformance" venv-pyiceberg-signing "$here/requirements-pyiceberg-signing.txt"
cd "$here"
FLOE_TEST_S3_SIGNING_ENDPOINT="http://127.0.0.1:$sport" FLOE_TEST_S3_ACCESS_KEY_ID="${keys% *}" FLOE_TEST_S3_SECRET_ACCESS_KEY="${keys#* }" \
	"$venv/bin/python" -m pytest -q
venv="$moto_venv"
