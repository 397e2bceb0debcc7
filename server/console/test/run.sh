#!/usr/bin/env bash
# The console's browser test, run by `make test`: checks that the committed
# build (server/console/dist/app.js) is what the sources build to, then drives the
# console in Debian's Chromium with playwright-core against bin/floe
# holding data written by iceberg-go (seed/main.go). Screenshots of each
# page go to bin/console-screenshots/.
#
# Installs what is missing: Debian's chromium and chromium-driver (apt-get,
# through sudo when not root) and the npm packages of server/console/package.json
# (npm ci; node_modules/ is git-ignored and reinstalled only when the
# lockfile changes).
#
# Environment: FLOE_BIN (default bin/floe), GO (default go), CHROMIUM (the
# browser executable; default Debian's), CONSOLE_TEST_TIMEOUT (seconds the
# browser run may take, default 300).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
console="$(dirname "$here")"
root="$(dirname "$(dirname "$console")")" # server/console is two levels down
floe_bin="${FLOE_BIN:-$root/bin/floe}"
go="${GO:-go}"
shots="$root/bin/console-screenshots"

say() { echo "console test: $*" >&2; }

# Chromium from Debian, installed once.
if ! command -v chromium >/dev/null; then
	say "installing Debian's chromium and chromium-driver"
	sudo=""
	if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver >/dev/null
fi
# Debian's /usr/bin/chromium is a wrapper script; Playwright wants the
# binary itself.
chromium="${CHROMIUM:-}"
if [[ -z $chromium ]]; then
	chromium=/usr/lib/chromium/chromium
	[[ -x $chromium ]] || chromium="$(command -v chromium)"
fi

# The npm packages, reinstalled only when the lockfile changed.
cd "$console"
if ! cmp -s package-lock.json node_modules/.floe-lock; then
	npm ci --no-audit --no-fund --loglevel=error
	cp package-lock.json node_modules/.floe-lock
fi

# The committed build must be what the sources build to.
mkdir -p "$root/.cache/console"
node build.mjs "$root/.cache/console/app.js"
if ! cmp -s dist/app.js "$root/.cache/console/app.js"; then
	say "server/console/dist/app.js differs from a build of server/console/web/src: run 'cd console && npm ci && npm run build' and commit dist/app.js"
	exit 1
fi

# The commit graph's layout on its own (no browser needed).
node_modules/.bin/esbuild web/src/graph.ts --format=esm --log-level=warning --outfile="$root/.cache/console/graph.mjs"
FLOE_GRAPH_MODULE="$root/.cache/console/graph.mjs" node --test "$here/graph.test.mjs"

[[ -x $floe_bin ]] || { say "no floe binary at $floe_bin (make build)"; exit 1; }
work="$(mktemp -d)"
floe_pid=""
cleanup() {
	if [[ -n $floe_pid ]]; then kill "$floe_pid" 2>/dev/null || true; wait "$floe_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

# Three principals: admin may do everything the default policy allows
# (groups admins, publishers and ingest); viewer is in no group, so it may read
# but not create, delete or merge branches, nor review merge requests;
# reviewer (group reviewers) may approve and reject merge requests.
admin_token="admin-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
viewer_token="viewer-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
reviewer_token="reviewer-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
hash() { printf '%s' "$1" | sha256sum | cut -d' ' -f1; }
cat >"$work/tokens.json" <<EOF
{"tokens": [
  {"sha256": "$(hash "$admin_token")", "principal": "admin", "groups": ["admins", "publishers", "ingest"]},
  {"sha256": "$(hash "$viewer_token")", "principal": "viewer", "groups": []},
  {"sha256": "$(hash "$reviewer_token")", "principal": "reviewer", "groups": ["reviewers"]}
]}
EOF

# And an OAuth client (the client-credentials flow of /v1/oauth/tokens),
# a reader too.
oauth_secret="secret-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
cat >"$work/oauth-clients.json" <<EOF
{"clients": [{"client_id": "console-reader", "secret_sha256": "$(hash "$oauth_secret")", "principal": "reader", "groups": []}]}
EOF

: >"$work/floe.log" # exists before the loop below reads it
"$floe_bin" serve --addr 127.0.0.1:0 --data-dir "$work/data" --warehouse "$work/warehouse" \
	--auth-token-file "$work/tokens.json" --auth-oauth-clients-file "$work/oauth-clients.json" \
	--log-format text >"$work/floe.log" 2>&1 &
floe_pid=$!
addr=""
for _ in $(seq 1 100); do
	addr="$(sed -n 's/.*msg=listening addr=\([0-9.:]*\).*/\1/p' "$work/floe.log" | head -1)"
	[[ -n $addr ]] && break
	kill -0 "$floe_pid" 2>/dev/null || { cat "$work/floe.log" >&2; say "floe exited"; exit 1; }
	sleep 0.1
done
[[ -n $addr ]] || { cat "$work/floe.log" >&2; say "floe did not start listening"; exit 1; }
url="http://$addr"

cd "$root"
"$go" run ./server/console/test/seed -server "$url" -token "$admin_token"

rm -rf "$shots"
status=0
FLOE_URL="$url" FLOE_ADMIN_TOKEN="$admin_token" FLOE_VIEWER_TOKEN="$viewer_token" FLOE_REVIEWER_TOKEN="$reviewer_token" FLOE_SCREENSHOTS="$shots" CHROMIUM="$chromium" \
	FLOE_OAUTH_CLIENT=console-reader FLOE_OAUTH_SECRET="$oauth_secret" \
	timeout -k 10 "${CONSOLE_TEST_TIMEOUT:-300}" \
	node --test --test-concurrency=1 "$here/console.test.mjs" || status=$?
if [[ $status -ne 0 ]]; then
	say "failed (exit $status); floe's log:"
	tail -n 40 "$work/floe.log" >&2
fi
exit "$status"
