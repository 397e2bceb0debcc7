// Package assemble is floe's composition root: the one place where the
// services of a floe server process are built, and the only one. From a
// Config, plain data as etcd's embed.Config is, and Deps, what is live
// beside it (a tracer, clocks, a test's stubs), it builds, in this order,
// the version store (Pebble backend in the data directory),
// authentication, the decision log and the policy engine,
// the APIs (the Iceberg REST facade and the Nessie API v2), their
// background workers, and last the HTTP server, which receives nothing but
// route registrations over those already-built services.
//
// It also owns their lifetimes. On shutdown the HTTP server drains first
// (readiness fails, the drain delay passes, in-flight requests get the
// shutdown timeout); only then are the services closed, in the reverse
// order of their creation: background workers, the policy engine (which
// flushes its decisions), the decision-log file, authentication's
// watchers, and the version store last. So every request that is answered
// is answered by open services, and every decision it caused is logged.
//
// `floe serve` (cmd/floe) turns flags into a Config and calls Run; the test
// server (conformance/testkit/testserver) calls Build and Serve, so tests exercise
// the same assembly. A new service or background worker is added here,
// never as a side effect of mounting routes.
//
// The package only builds, starts and closes: it holds no request handling
// and no domain logic, and it must not import cmd/floe or anything
// test-only. Nothing below it (server, rest, policy, versionstore) may
// import it.
package assemble
