// Package testserver starts floe's real server for tests: a Pebble-backed
// version store in a temporary directory, a file:// warehouse beside it,
// the APIs the test mounts, and floe's full middleware, served by
// httptest on a free loopback port. It exists so the test harnesses of
// the APIs, the conformance suites and the benchmarks stop each opening a
// store and a server their own way.
//
// It is for tests only: it imports server, versionstore and the Pebble
// backend, and nothing imports it outside _test.go files.
package testserver
