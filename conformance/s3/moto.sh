# Sourced by conformance/s3/run.sh and conformance/spark/run.sh: one way
# to start moto's standalone S3 server with signature checking on, for the
# tests of floe's remote signing.
#
# moto checks SigV4 signatures only when INITIAL_NO_AUTH_ACTION_COUNT is
# set, and only against the keys of an IAM user it made: the first three
# requests (make the user, its key, an s3:* policy) go unchecked, every
# later one is checked.
#
# floe_moto_signing LABEL PYTHON LOGDIR starts it on a free loopback port
# with PYTHON (an interpreter with moto[server] and boto3: the PyIceberg
# suite's virtualenv, so nothing more is downloaded), its log in
# LOGDIR/moto-signing.log, and sets moto_signing_pid (the caller's EXIT
# trap kills it) and exports
#   FLOE_TEST_S3_SIGNING_ENDPOINT    http://127.0.0.1:PORT
#   FLOE_TEST_S3_ACCESS_KEY_ID       the IAM user's key, floe's own
#   FLOE_TEST_S3_SECRET_ACCESS_KEY
# LABEL starts its messages.

floe_moto_signing() {
	local label="$1" py="$2" logdir="$3"
	local port keys
	port="$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
	INITIAL_NO_AUTH_ACTION_COUNT=3 "$py" -m moto.server -H 127.0.0.1 -p "$port" >"$logdir/moto-signing.log" 2>&1 &
	moto_signing_pid=$!
	local i
	for i in $(seq 1 300); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			break
		fi
		if ! kill -0 "$moto_signing_pid" 2>/dev/null; then
			echo "$label: moto_server exited:" >&2
			cat "$logdir/moto-signing.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	keys="$("$py" - "http://127.0.0.1:$port" <<'PY'
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
	export FLOE_TEST_S3_SIGNING_ENDPOINT="http://127.0.0.1:$port"
	export FLOE_TEST_S3_ACCESS_KEY_ID="${keys% *}" FLOE_TEST_S3_SECRET_ACCESS_KEY="${keys#* }"
	echo "$label: signature-checking moto listening on 127.0.0.1:$port"
}
