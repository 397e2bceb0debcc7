// Package pebblebackend stores the version store's objects, references and
// reference log in an embedded Pebble database on local disk. It owns the key
// layout inside that database, the on-disk format marker, and the locking that
// turns Pebble's atomic batches into compare-and-swap reference updates.
//
// It implements backend.Backend and imports only versionstore/backend and
// Pebble: it must never import the version store itself, HTTP, or Iceberg
// packages. Everything above the storage interface belongs elsewhere.
//
// # A disk that refuses writes
//
// Pebble treats a failed write-ahead-log write as fatal (it panics, and in
// rotateWAL the panic ends the process), so the backend keeps refusals
// from reaching it: diskguard.go holds a write the disk refuses (full, or
// the directory unwritable) until it takes it, while Apply refuses new
// batches with backend.ErrUnavailable and Writable says why. A failed
// fsync, which cannot be retried safely, makes its batch's outcome
// unknown and the backend reopens the database once the disk takes
// writes (recover.go). Open fails at once on a disk that cannot write.
//
// # On-disk format
//
// Two versions describe a database: floe's key layout (the format marker,
// formatVersion in keys.go) and Pebble's own format major version
// (FormatMajorVersion in open.go). Both are pinned. Pebble upgrades a
// database to the version it is opened with and cannot go back, so the
// Pebble version is never left to follow the dependency: bumping Pebble
// changes nothing on disk. Upgrading the format is a deliberate step: raise
// FormatMajorVersion, note in the release notes that stores opened by the new
// build can no longer be opened by older ones, and keep a test that opens a
// store written at the previous version.
package pebblebackend
