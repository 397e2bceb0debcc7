// Package floeapi is floe's own HTTP API, served under /api/floe/v1.
//
// The operations on the catalog that neither the Iceberg REST API nor the
// Nessie API has a place for (garbage collection, maintenance locks, the
// merge queue, ...). It owns the routing, the JSON error model and the
// OpenAPI document (openapi.yaml, served at /api/floe/v1/openapi.yaml); each
// capability adds its routes in a file of its own and the services it calls
// to Deps.
//
// It is an API package: it may import the services it exposes and
// rest/authz, never another API package (rest/icebergrest, rest/nessie)
// or the composition root (assemble).
package floeapi
