// Package icebergo drives floe's Iceberg REST facade with Apache
// iceberg-go's client, writer and scanner.
//
// It drives floe's Iceberg REST facade with Apache iceberg-go (the v0.7.0
// REST catalog client, its table writer and its scanner) against a real floe
// server on a loopback port, with the version store on Pebble and a file://
// warehouse. It holds tests only: iceberg-go's own catalog conformance
// suite, end-to-end writes and reads, catalog and table branches,
// multi-table transactions and concurrent commits.
//
// It needs nothing but Go: the server, the store and the client all run in
// the test process, so the suite runs under `make test` like any package.
// Nothing outside tests may import it.
package icebergo
