// Package rest holds floe's HTTP APIs, one subpackage each.
//
// The Iceberg REST catalog facade with branch-qualified warehouses
// (rest/icebergrest), the Nessie-compatible API v2 (rest/nessie) and floe's
// own API (merge queue, events, admin: rest/floeapi), with the authorization
// glue they share (rest/authz). Each translates requests into version-store
// operations and results back into its API's JSON and error model, and
// registers its routes on a *mux.Router; the composition root
// (server/assemble) builds each API and serves its routes through a
// server.Mount.
//
// rest packages may import versionstore (its exported API only) and policy
// (to ask whether an operation is allowed). They must not import server,
// whose middleware wraps them, nor a storage backend
// (versionstore/pebblebackend or any other): they see storage only through
// versionstore. Nothing in versionstore or policy may import rest.
package rest
