// Package nessie is floe's Project Nessie REST API v2, served under
// /api/v2: references (branches, tags, detached hashes and Nessie's
// relative reference notation), entries, contents, commit log, diff,
// commits, merges and transplants, with Nessie's JSON shapes, content-key
// path encodings (legacy and spec 2.2.0) and error model. It translates
// requests into calls on the version store, which already holds Nessie's
// semantics; tables written through the Iceberg REST facade share that
// store and so appear here, and the other way round.
//
// The package must not import server/ (cmd/floe adapts Register to a
// server.Mount) nor reach into the version store's internals: it uses
// only versionstore's exported API.
package nessie
