// Package nessie is floe's Project Nessie REST API v2, served under /api/v2.
//
// References (branches, tags, detached hashes and Nessie's relative
// reference notation), entries, contents, commit log, diff, commits, merges
// and transplants, with Nessie's JSON shapes, content-key path encodings
// (legacy and spec 2.2.0) and error model. It translates requests into calls
// on the version store, which already holds Nessie's semantics; tables
// written through the Iceberg REST facade share that store and so appear
// here, and the other way round.
//
// Listing filters are CEL expressions, checked against the variables and
// types Nessie declares for each listing and bounded in cost (filter.go).
//
// With Deps.Authenticate every route names its caller (401 otherwise), and
// with Deps.Guard every operation asks the policy engine (authz.go):
// reads of a reference (listings leave out references the caller may not
// read), reference create/assign/delete, commits with each key they write,
// and merges and transplants with the exact changes the store is about to
// write on the target, decided inside the store's write so that a denial
// of any one key writes nothing. Denials are 403 FORBIDDEN with the
// policy's reasons.
//
// With Deps.Merger (package mergeengine, wired by assemble) a dry-run merge
// reports what the real merge would do, writing nothing: a table the
// engine would merge is no conflict, a refused one is a conflict whose
// message ends with the reason; with ?floe-classification=true each such
// key's detail carries floe's classification document and what the merge
// does with the table (floeMerge: cherry-pick N snapshots, already-merged,
// or refuse and why). Without a Merger, or when a conflict the engine does
// not resolve fails the merge, Deps.Classifier classifies each Iceberg
// table that conflicts at key level (classification.go, package classify):
// the class and reason go into the conflict's message, Nessie's conflict
// types stay, and the document is added on request as above.
//
// With Deps.Merger a merge no longer fails on an Iceberg table merely because both
// sides changed it. For each such key whose merge behavior is NORMAL (the
// default) and for which the client gave no resolvedContent, the engine
// classifies the table and, when it is disjoint, or a partition overlap
// the table's floe.merge.partition-overlap rule (allow | check | refuse;
// catalog default check) allows, cherry-picks the source's snapshots onto
// the target's head (new manifest lists, data files untouched, summaries
// naming floe.merge.source-snapshot-id and floe.merge.source-ref), writes
// the new metadata.json and commits every table in one merge commit with
// two parents. File conflicts, structural changes and refused overlaps
// (duplicate identifier keys under check are named) fail the merge with
// 409 REFERENCE_CONFLICT, the reason in each conflict's message, and
// nothing is written. FORCE and DROP keep their Nessie meaning: FORCE is
// how a person takes the source's version of a structurally changed
// table. Authorization sees the exact contents written, resolved tables
// included. A transplant goes through the Merger too: a table the target
// changed as well is merged by cherry-picking the transplanted commit's
// snapshots, and a transplant of snapshots already on the target is a
// no-op.
//
// The package must not import server/ (the composition root, package
// assemble, calls Register from a server.Mount) nor reach into the version
// store's internals: it uses
// only versionstore's exported API.
package nessie
