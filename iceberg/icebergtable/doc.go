// Package icebergtable reads and writes Iceberg table and view metadata
// within a warehouse's rules.
//
// It is floe's Iceberg table package: it owns reading and writing Iceberg
// table and view metadata files through a warehouse's file IO (local files
// or S3), the cache of parsed metadata files, the warehouse's table
// locations (where a new table goes, whether a location a client supplied
// lies inside the warehouse), the mapping between a metadata file and the
// version store's content value, the names of the commit properties that
// record Iceberg operations in the version history, and the table properties
// that keep engines from deleting files catalog branches share
// (sharedfiles.go).
//
// Every layer above the version store that touches Iceberg metadata uses
// it: the Iceberg REST facade, the merge layer (classify, mergeengine,
// mergecheck), garbage collection, table statistics (maintenance) and the
// change feed. Services are passed explicitly: a Warehouse is opened once with its
// IO properties and a MetadataCache, and handed to whoever reads or writes
// its files.
//
// The package may import iceberg-go, gocloud and versionstore's exported
// API. It must not import net/http or any rest/ package (checked by
// TestImports): data flows from the APIs down to it, never back up.
package icebergtable
