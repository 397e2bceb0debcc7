// Package storeexport writes a store's whole history to one portable file
// and reads it back.
//
// It writes a version store's whole history to one portable file and reads
// it back into an empty store: every object (commits, tree nodes, content
// values), the references, the reference log and the records, in a
// documented, versioned, streaming format (see README.md, "Format"). It is
// how an operator moves a catalog from the embedded Pebble store to
// PostgreSQL, or from one machine to another.
//
// It works through versionstore/backend only, byte for byte: it never
// decodes an object, so the file holds exactly what the source stored and
// any backend can be the source or the target. Import checks every
// object's SHA-256 against its id and the file's own checksum, and writes
// the references, the reference log and the records in one last batch, so
// a truncated or corrupt file leaves nothing visible in the target.
//
// Compare holds two backends to the same content; the tests use it after
// an import, into Pebble here and into PostgreSQL in storebackup.
//
// It must not import the version store above the backend interface, any
// backend implementation, HTTP or Iceberg packages.
package storeexport
