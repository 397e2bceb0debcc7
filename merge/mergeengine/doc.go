// Package mergeengine owns what a catalog merge (or transplant) does with
// Iceberg tables that changed on both sides since the merge base. It runs
// the version store's merge; on a conflict it classifies every table that
// conflicts only because both sides changed it (package classify),
// cherry-picks the source's snapshots onto the target's head where the
// class and the table's rule allow it, and rebases file conflicts by
// replaying the overwrites and deletes the source recorded with the
// floe.operation.* vocabulary (replay.go, OPERATIONS.md) (both written by
// package tablemerge), writes the new metadata files (package
// icebergtable), and hands the store the new values as resolved content,
// so all tables land in one merge commit with two parents, or none does. A
// transplant does the same with each transplanted commit's own snapshots
// (transplant.go); dry runs report what would happen and remove what they
// wrote.
//
// Refusals (structural changes, file conflicts not replayable, partition overlaps the
// table's rule refuses, duplicate identifier keys) are returned as the
// store's *versionstore.ConflictError inside a *RefusedError, with the
// reason in each conflict's message, and nothing is written: the files
// written for the attempt are removed, best effort. A table whose files
// cannot be read or written (permission denied, no space, the object
// store not answering, the caller's context ending) is no refusal: the
// merge fails with a *FaultError (fault.go), writes nothing, and may be
// tried again; the APIs answer it with a 5xx and the merge queue retries
// it.
//
// The package may import versionstore, classify, tablemerge, icebergtable,
// iceberg-go and gocloud's error codes. It must not import net/http or any rest/ package (checked
// by TestImports): the APIs call it, never the other way.
package mergeengine
