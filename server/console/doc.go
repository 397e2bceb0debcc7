// Package console is floe's web console: a single-page application served
// under /ui/ from assets embedded in the binary. The page talks only to
// floe's documented APIs (the Nessie API v2, floe's own API and the Iceberg
// REST catalog) with the caller's own bearer token, so every action goes
// through the same authentication and policy as any other client; this
// package adds no endpoint of its own and holds no state.
//
// The TypeScript sources are in web/src; dist/app.js is their build, which
// is committed so that `go build` needs no Node.js (server/console/test/run.sh
// rebuilds it and fails when it differs). It must not import floe's other
// packages: it serves files and nothing else.
package console
