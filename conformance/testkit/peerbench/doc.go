// Package peerbench measures floe beside Project Nessie on Nessie's REST API
// v2.
//
// It measures floe side by side with Project Nessie: the same Go client and
// the same workloads on Nessie's REST API v2, which both servers speak,
// against every server whose URL is given, so one `make bench` table shows
// `Commit/server=floe/clients=16` next to `Commit/server=nessie/clients=16`.
//
// It owns the benchmark client (client.go: Nessie's paths and types over
// conformance/testkit/benchhttp's raw net/http and JSON, one keep-alive pool sized to
// the number of concurrent clients), the workloads (workload.go), the
// benchmarks (bench_test.go) and run.sh, which (with conformance/testkit/peers.sh,
// shared with conformance/testkit/icebergpeers) downloads and starts the Nessie server
// and floe's own binary as separate processes, passes their URLs in
// FLOE_PEER_FLOE_URL and FLOE_PEER_NESSIE_URL, and stops them afterwards. Without those
// variables the benchmarks skip, so `go test ./...` runs only the test
// that checks the client against an in-process floe.
//
// Outside its tests the package talks HTTP only: it must not import
// floe's server-side packages (rest/, server/, versionstore/) nor
// internal/nessieclient, so both servers are driven by exactly the same
// code and none of floe's own client shortcuts. The one floe package it
// imports is conformance/testkit/benchhttp, which imports only the standard library.
package peerbench
