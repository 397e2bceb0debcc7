// Package mergecheck validates a merge candidate: the commit the queue built
// and is about to publish.
//
// It owns the validation of a merge candidate: the commit a merge queue
// built on a target branch's head (its first parent) and is about to
// publish. It computes the merge summary (what the candidate changes against
// the target head: tables, snapshots, partitions, files and records, schema,
// spec and sort-order changes, who asked and from where), runs the built-in
// checks on it (lineage, schema, row counts and nulls on the touched
// partitions), the merge rules of the active policy bundle
// (data.floe.merge.check, evaluated by package policy's embedded OPA
// engine), and the external checks a request requires (signed webhooks), and
// keeps every result keyed by the candidate commit id, so a result is never
// reused for another candidate. README.md documents every check and the
// summary document.
//
// It reads the store and table metadata and manifests only, never data
// files: classify reads the snapshots the candidate added, this package
// the manifest entries' statistics (record and null counts) and the
// target's live files (lineage, records before).
//
// The package may import versionstore, classify, icebergtable, iceberg-go
// and net/http as a client (webhooks only; it serves nothing). It must not
// import policy (the engine comes in through the PolicyEvaluator
// interface), the merge queue, assemble, server or any rest/ package
// (checked by TestImports): the queue calls it, never the other way.
package mergecheck
