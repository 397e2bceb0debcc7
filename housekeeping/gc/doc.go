// Package gc deletes the warehouse files that no branch or tag can reach,
// and only those.
//
// It owns floe's reference-aware garbage collection of warehouse files: it
// marks every file that a table or view reaches on a live reference (every
// branch and tag, within each reference's history retention), then sweeps
// each warehouse and deletes what nothing marked and what is older than a
// grace period. Catalog branches share files, so only a collector that sees
// every reference may delete any; engines are kept from deleting
// (gc.enabled=false) and this package does it instead.
//
// Marks go to a temporary Pebble database, so the memory a run needs does
// not grow with the number of files in the warehouse (see README.md).
//
// It imports versionstore, icebergtable, iceberg-go and Pebble. It must
// not import net/http or any rest/ package: the API (rest/floeapi) calls
// it, never the other way round.
package gc
