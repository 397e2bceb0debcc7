// Package server wires one floe process together: it turns a Config into an
// open version store and an HTTP server, owns the middleware every API shares
// (request ids, access logs, metrics, panic recovery, body limits, timeouts),
// the health, readiness and metrics endpoints, and the lifecycle from start to
// graceful shutdown, in which the store is always closed last.
//
// APIs (the Iceberg REST facade, the Nessie API, floe's own API) plug in
// through Config.Mounts and bring their own handlers; cmd/floe adapts each
// API's route registration into a Mount, so server never imports the API
// packages. This package holds no domain logic: it never interprets catalog
// content, refs or Iceberg JSON. versionstore must never import server.
package server
