// Package rest will own floe's HTTP APIs: the Iceberg REST catalog facade
// (branch-qualified warehouses, every endpoint of the spec with its error
// types), the Nessie-compatible API v2, and floe's own API (merge queue,
// admin). It translates requests into version-store operations and results
// back into each API's JSON and error model. Each API lives in its own
// subpackage (the Iceberg REST facade in rest/icebergrest) and registers its
// routes on a *mux.Router; the composition root (package assemble) builds
// each API and serves its routes through a server.Mount.
//
// rest packages may import versionstore (its exported API only) and policy
// (to ask whether an operation is allowed). They must not import server,
// whose middleware wraps them, nor a storage backend
// (versionstore/pebblebackend or any other): they see storage only through
// versionstore. Nothing in versionstore or policy may import rest.
package rest
