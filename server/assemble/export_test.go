package assemble

// Postgres is the package tests' PostgreSQL cluster (see TestMain), for
// the external tests.
var Postgres = &postgres
