#!/usr/bin/env bash
# Installs PostgreSQL from Debian's packages when its server binaries are
# missing, for the tests that start a private cluster (conformance/testkit/pgtest).
# Run by `make test`, which then sets FLOE_REQUIRE_POSTGRES=1 so that those
# tests fail rather than skip if PostgreSQL is still not there.
set -euo pipefail

have() {
	[[ -n "${FLOE_PG_BIN:-}" && -x "$FLOE_PG_BIN/initdb" ]] && return 0
	for d in /usr/lib/postgresql/*/bin; do
		[[ -x "$d/initdb" && -x "$d/pg_ctl" && -x "$d/postgres" ]] && return 0
	done
	command -v initdb >/dev/null 2>&1
}

if have; then
	exit 0
fi
echo "pgtest: PostgreSQL not found; installing Debian's postgresql package" >&2
sudo=""
if [[ "$(id -u)" != 0 ]]; then
	sudo="sudo"
fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql >/dev/null
# The package starts a system cluster; the tests use their own.
have || { echo "pgtest: postgresql installed but initdb is still missing" >&2; exit 1; }
