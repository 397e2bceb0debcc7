// Package pgbackend keeps the version store in PostgreSQL, so several
// stateless replicas share one catalog.
//
// It stores the version store's objects, references, reference log and
// records in a PostgreSQL database, so that several stateless floe replicas
// can share one catalog. It owns the SQL schema, its versioned migrations,
// and the transactions that turn a backend.Batch into one atomic, durable
// commit: objects inserted if absent, references moved by a single-row
// compare-and-swap, log records numbered by a counter row, records checked
// and written, all in one transaction.
//
// The SQL is kept to what CockroachDB also accepts (see README.md): no
// advisory locks, no LISTEN/NOTIFY, and serialization failures (SQLSTATE
// 40001) and deadlocks (40P01) retried.
//
// It implements backend.Backend and imports only versionstore/backend and
// pgx: it must never import the version store itself, HTTP, or Iceberg
// packages.
package pgbackend
