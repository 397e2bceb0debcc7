// Package testserver starts floe's real server for tests over a temporary
// store and warehouse.
//
// It starts floe's real server for tests: the process the composition root
// (package assemble) builds for `floe serve`, over a Pebble store in a
// temporary directory and a file:// warehouse beside it, served on a free
// loopback port. It exists so the test harnesses of the APIs, the
// conformance suites and the benchmarks exercise the real assembly instead
// of each opening a store and a server their own way.
//
// It is for tests only: it imports assemble, and nothing imports it
// outside _test.go files.
package testserver
