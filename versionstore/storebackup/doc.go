// Package storebackup backs up, restores and exports the embedded Pebble
// store. A backup is a Pebble checkpoint taken while the server runs: a
// consistent copy that holds every commit acknowledged before it began,
// and is itself a data directory. Restore copies a backup into an empty
// data directory and opens it to check it. An online export reads a
// checkpoint (so it is one consistent state however busy the store) and
// writes storeexport's portable file; the offline export and import run
// against a data directory no server has open.
//
// floe's API serves Backup and Export (rest/floeapi); `floe admin` runs
// the rest (cmd/floe). It imports the version store, its Pebble backend
// and storeexport, never net/http, rest/ or Iceberg packages.
package storebackup
