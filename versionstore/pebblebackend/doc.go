// Package pebblebackend stores the version store's objects, references and
// reference log in an embedded Pebble database on local disk. It owns the key
// layout inside that database, the on-disk format marker, and the locking that
// turns Pebble's atomic batches into compare-and-swap reference updates.
//
// It implements backend.Backend and imports only versionstore/backend and
// Pebble: it must never import the version store itself, HTTP, or Iceberg
// packages. Everything above the storage interface belongs elsewhere.
package pebblebackend
