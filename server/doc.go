// Package server is floe's HTTP wiring: the router, the shared middleware,
// health and shutdown.
//
// It is floe's HTTP wiring: the router, the middleware every API shares
// (request ids, access logs, metrics, panic recovery, body limits,
// timeouts), the health, readiness and metrics endpoints, and the HTTP side
// of shutdown: /readyz fails, the listener closes after the drain delay, and
// in-flight requests get the shutdown timeout to finish. When the operator
// asks for them (floe serve --pprof-addr), it also serves Go's runtime
// profiles on a loopback listener of their own (pprof.go).
//
// It builds no service. The version store, authentication, the policy
// engine and the APIs are built by the composition root (package assemble),
// which hands New the open store and the APIs' route registrations
// (Config.Mounts) and closes the services only after Serve has returned.
// This package holds no domain logic: it never interprets catalog content,
// refs or Iceberg JSON, and imports no API package. versionstore must never
// import server.
package server
