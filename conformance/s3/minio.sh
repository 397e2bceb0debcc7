# Sourced by conformance/s3/run.sh and conformance/trino/run.sh: MinIO, the
# S3 server the tests of vended credentials need, because it enforces STS
# session policies (moto stores them and never evaluates them; see
# docs/object-storage.md).
#
# MinIO is built from its Go module, at the pinned pseudo-version below
# (MinIO tags no Go-module releases), into .cache/minio-VERSION/bin. The
# first build downloads about 1.2 GB of modules into Go's module cache and
# compiles for about 7 minutes on two cores; later runs reuse the binary.
#
# floe_minio_install LABEL sets minio_bin to the binary, building it first
# when missing. It expects root and go to be set.
#
# floe_minio_start LABEL LOGDIR starts it on a free loopback port with a
# fresh data directory under LOGDIR and the root user below, waits until it
# answers, sets minio_pid (the caller's EXIT trap kills it) and exports
#   FLOE_TEST_MINIO_ENDPOINT        http://127.0.0.1:PORT (S3 and STS)
#   FLOE_TEST_MINIO_ACCESS_KEY_ID   the root user's keys: floe's own, and
#   FLOE_TEST_MINIO_SECRET_ACCESS_KEY  the identity AssumeRole is called with
# MinIO answers STS AssumeRole for any user with keys (the root user's
# included): the credentials it gives carry that user's policies narrowed
# by the session policy, which it evaluates on every request.

floe_minio_version="v0.0.0-20260212201848-7aac2a2c5b7c"

floe_minio_install() {
	local label="$1"
	local dir="$root/.cache/minio-$floe_minio_version"
	minio_bin="$dir/bin/minio"
	if [[ -x "$minio_bin" ]]; then
		return 0
	fi
	echo "$label: building MinIO $floe_minio_version from its Go module into $dir (first time only: about 1.2 GB of modules, several minutes)"
	mkdir -p "$dir"
	# CGO off: MinIO needs none, and a static binary does not depend on the
	# machine's C toolchain.
	if ! GOBIN="$dir/bin.tmp" CGO_ENABLED=0 GOFLAGS=-modcacherw "$go" install "github.com/minio/minio@$floe_minio_version" >"$dir/install.log" 2>&1; then
		echo "$label: go install of MinIO failed:" >&2
		tail -n 40 "$dir/install.log" >&2
		rm -rf "$dir/bin.tmp"
		exit 1
	fi
	mv "$dir/bin.tmp" "$dir/bin"
}

floe_minio_start() {
	local label="$1" logdir="$2"
	local port py
	py="$(command -v python3)"
	port="$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
	mkdir -p "$logdir/minio-data"
	MINIO_ROOT_USER=floe-root MINIO_ROOT_PASSWORD=floe-root-secret-key \
		MINIO_BROWSER=off MINIO_UPDATE=off MINIO_CI_CD=1 \
		"$minio_bin" server --quiet --address "127.0.0.1:$port" "$logdir/minio-data" >"$logdir/minio.log" 2>&1 &
	minio_pid=$!
	local i
	for i in $(seq 1 600); do
		if curl -fsS -o /dev/null "http://127.0.0.1:$port/minio/health/ready" 2>/dev/null; then
			break
		fi
		if ! kill -0 "$minio_pid" 2>/dev/null; then
			echo "$label: minio exited:" >&2
			cat "$logdir/minio.log" >&2
			exit 1
		fi
		if [[ "$i" == 600 ]]; then
			echo "$label: minio did not become ready in 60 s:" >&2
			cat "$logdir/minio.log" >&2
			exit 1
		fi
		sleep 0.1
	done
	export FLOE_TEST_MINIO_ENDPOINT="http://127.0.0.1:$port"
	export FLOE_TEST_MINIO_ACCESS_KEY_ID=floe-root FLOE_TEST_MINIO_SECRET_ACCESS_KEY=floe-root-secret-key
	echo "$label: MinIO listening on 127.0.0.1:$port"
}
