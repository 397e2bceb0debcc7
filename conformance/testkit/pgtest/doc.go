// Package pgtest starts a private, durable PostgreSQL cluster for tests.
//
// It starts a private PostgreSQL cluster for tests: initdb into a temporary
// directory, then pg_ctl start on a free loopback port, with fsync and
// synchronous_commit on so that durability is what production gets. One
// cluster is shared by a test package (Main, from TestMain); each test takes
// its own schema or database in it.
//
// When the binaries are missing, tests skip, unless FLOE_REQUIRE_POSTGRES
// is set (make test sets it, after install.sh has installed Debian's
// postgresql package): then a missing PostgreSQL fails the run instead of
// skipping silently.
//
// It is test support only: nothing outside _test.go files may import it.
package pgtest
