// Command floe is the floe binary: `floe serve` runs the server, the other
// commands are its client.
//
// It is the floe catalog binary: `floe serve` runs the server, and the
// client commands (branch, tag, log, diff, show, ls, merge, transplant) talk
// to a server's Nessie API v2.
//
// It holds flag wiring, client commands and output only; the work happens
// in the server, version store and client packages.
//
// It must not be imported; the process itself is assembled by package
// assemble, which `floe serve` calls.
package main
