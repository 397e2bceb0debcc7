// Package rowlake writes Iceberg tables on catalog branches and remembers
// the rows each must hold.
//
// It writes Iceberg tables through a floe server's Iceberg REST API with
// iceberg-go, on catalog branches (lake@REF), and keeps the row ids every
// (ref, table) must hold, so a test can scan them all and check nothing was
// lost: the garbage collector's tests (gc) and its crash test against the
// real binary (cmd/floe) share it.
//
// It is for tests only. It talks to the server over HTTP alone (the URL
// is the caller's: an in-process testserver, or a `floe serve` process
// restarted at will); of floe it imports only versionstore, for the
// default branch's name.
package rowlake
