// Package tablemerge writes the Iceberg side of a merge: cherry-picks,
// replays, delete unions, row merges.
//
// It is the Iceberg writing side of floe's merge engine: it cherry-picks
// snapshots from one lineage of a table onto the head of another, writing
// new manifest lists and returning new table metadata. The server's
// zero-retry appends (an append whose parent went stale is re-parented onto
// the new head) and the Iceberg-aware merges and rebases are built on it.
//
// A cherry-pick re-lists the source snapshot's own manifests after the
// target head's: data and delete files are never copied or rewritten;
// manifests are listed as byte-for-byte copies under new paths (readers
// cache manifests by path, and the source's list names the original with
// other sequence numbers), except a merge-append's (Iceberg Java's
// default), which also carries earlier files as EXISTING entries: the
// pick gets a new manifest of its ADDED entries. The zero-retry rebase
// re-lists a client's new manifests as they are (Request.ReuseManifests).
// A pick may instead be a replay (Pick.Replay): of a recorded partition
// overwrite or delete, or of the snapshot's own file changes (a row-level
// UPDATE, DELETE or MERGE INTO, the three-way merge of files): the head's
// manifests holding the files it removes are rewritten with those entries
// DELETED. With Request.RowMerge, data files both sides rewrote are merged
// by v3 row lineage after the picks (rowmerge.go): one more snapshot of
// deletion vectors leaves each row's winning copy visible; only the
// lineage and values of those rows are read. It writes manifests,
// manifest lists and deletion vectors only, through
// the Files it is given; the caller writes the metadata file (with
// icebergtable) and commits it.
//
// The package may import iceberg-go and icebergtable. It must not import
// net/http or any rest/ package: the APIs call it, never the other way.
package tablemerge
