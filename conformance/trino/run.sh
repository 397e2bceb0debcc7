#!/usr/bin/env bash
# Runs the Trino conformance suite against bin/floe (built by `make build`).
# Needs python3 (3.10+) with pip, and a Java 24+ runtime for Trino 476 (a
# Temurin 25 JDK under /usr/lib/jvm is found by itself).
#
# Trino's server tarball (io.trino:trino-server:476, about 820 MB) is
# downloaded once from Maven Central, checked against Central's SHA-1,
# unpacked into .cache/trino/trino-server-476 (git-ignored) and pruned to
# lib/ and the Iceberg connector (every other plugin goes: about 465 MB
# stay); the tarball is not kept. A stamp file marks a complete unpacking,
# so an interrupted one is redone. The Python client (the `trino` package) lives
# in the virtualenv .cache/venv-trino, built by ../venv.sh.
#
# test_s3_vended.py also needs MinIO, built from its Go module with GO
# (default go) into .cache/ the first time (../s3/minio.sh).
#
# Environment: TRINO_JAVA (the java binary, default: the newest Temurin
# 24+ under /usr/lib/jvm, else java on PATH if it is 24+), PYTHON (default
# python3), FLOE_BIN (default bin/floe), PYTEST_ARGS (extra pytest
# arguments, e.g. "-k tag -x", split with a shell's quoting rules),
# PYTEST_TIMEOUT (seconds the whole pytest run may take, default 1200).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"

trino_version=476
cache="$root/.cache/trino"
server="$cache/trino-server-$trino_version"
stamp="$server/.floe-complete"
tarball_url="https://repo1.maven.org/maven2/io/trino/trino-server/$trino_version/trino-server-$trino_version.tar.gz"

java_major() {
	"$1" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = \([0-9]*\).*/\1/p'
}

# Trino 476 refuses to start on Java older than 24.
java="${TRINO_JAVA:-}"
if [[ -z "$java" ]]; then
	for candidate in $(compgen -G '/usr/lib/jvm/*/bin/java' | sort -rV) "$(command -v java || true)"; do
		[[ -x "$candidate" ]] || continue
		major="$(java_major "$candidate")"
		if [[ -n "$major" && "$major" -ge 24 ]]; then
			java="$candidate"
			break
		fi
	done
fi
if [[ -z "$java" ]]; then
	echo "trino conformance: no Java 24+ found (Trino $trino_version needs it); install a JDK 24+ (e.g. Temurin 25) or set TRINO_JAVA" >&2
	exit 1
fi
major="$(java_major "$java")"
if [[ -z "$major" || "$major" -lt 24 ]]; then
	echo "trino conformance: $java is Java ${major:-unknown}; Trino $trino_version needs 24+" >&2
	exit 1
fi

if [[ ! -f "$stamp" ]]; then
	for tool in curl sha1sum tar; do
		if ! command -v "$tool" >/dev/null 2>&1; then
			echo "trino conformance: $tool not found" >&2
			exit 1
		fi
	done
	echo "trino conformance: fetching trino-server $trino_version from Maven Central into .cache/trino (about 820 MB, once)"
	rm -rf "$server" "$cache/unpack"
	mkdir -p "$cache/unpack"
	part="$cache/trino-server-$trino_version.tar.gz.part"
	curl -fsSL --retry 3 -o "$part" "$tarball_url"
	want="$(curl -fsSL --retry 3 "$tarball_url.sha1" | cut -c1-40)"
	got="$(sha1sum "$part" | cut -d' ' -f1)"
	if [[ "$want" != "$got" ]]; then
		rm -f "$part"
		echo "trino conformance: $tarball_url has SHA-1 $got, Maven Central says $want" >&2
		exit 1
	fi
	# Whole, not by member: the plugins share jars as hard links, which a
	# partial extraction cannot make.
	tar -xzf "$part" -C "$cache/unpack"
	rm -f "$part"
	unpacked="$cache/unpack/trino-server-$trino_version"
	# The suite runs the JVM itself (no launcher in bin/) from another
	# directory, so only lib/ and the Iceberg plugin are used.
	find "$unpacked/plugin" -mindepth 1 -maxdepth 1 ! -name iceberg -exec rm -rf {} +
	rm -rf "$unpacked/bin" "$unpacked/secrets-plugin"
	mv "$unpacked" "$server"
	rm -rf "$cache/unpack"
	touch "$stamp"
fi

# shellcheck source=../venv.sh
source "$here/../venv.sh"
floe_venv "trino conformance" venv-trino "$here/requirements.txt"

# test_s3_vended.py runs Trino on an s3:// warehouse through floe's vended
# credentials, on MinIO (it enforces their session policies), built from
# its Go module the first time and shared with the s3 suite.
go="${GO:-go}"
tmp="$(mktemp -d)"
minio_pid=""
cleanup() {
	if [[ -n "$minio_pid" ]]; then
		kill "$minio_pid" 2>/dev/null || true
		wait "$minio_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
# shellcheck source=../s3/minio.sh
source "$here/../s3/minio.sh"
floe_minio_install "trino conformance"
floe_minio_start "trino conformance" "$tmp"

# No bytecode or pytest cache inside the source tree.
export PYTHONDONTWRITEBYTECODE=1
export TRINO_HOME="$server" TRINO_JAVA="$java"
export FLOE_BIN="${FLOE_BIN:-$root/bin/floe}"
floe_pytest "trino conformance" pytest-trino 1200
