// Package versionstore is floe's content-addressed, whole-catalog version
// history.
//
// Content values, tree nodes and commits are immutable objects named by the
// SHA-256 of their canonical encoding; branches and tags are named
// references moved by compare-and-swap; every move is recorded in a
// reference log.
//
// A commit's tree is a persistent sorted map from content key to content
// value, stored as a Merkle search tree whose node boundaries depend only on
// the keys it holds. Equal key sets therefore give equal trees, updates write
// O(k log n) nodes and diffs skip equal subtrees.
//
// A group-commit round persists the tree of its last commit only; the trees
// of the commits before it in the round are rebuilt from their operations
// when read after they have left memory (intermediate.go). A persisted
// node's whole subtree is always persisted.
//
// The store owns the commit rule (per-key optimistic concurrency with
// automatic rebase), group commit (concurrent commits to one branch are
// applied in order in memory and made durable in one batch), merge base,
// merge, transplant and diff at the level of keys.
//
// A branch's committer goroutine only applies writes; it never waits on a
// caller. A merge or transplant is computed, and vetted by its WriteCheck,
// on the caller's goroutine against the branch head, and the committer
// writes it only if the keys it read are unchanged since (merge.go,
// planAndWrite); otherwise it is computed and checked again. Records
// (records.go) ride in the same batch as the commit that carries them and
// may be written by compare-and-swap.
//
// A write is acknowledged once durable, except on a scratch ref
// (Options.ScratchRefPrefixes: the merge queue's candidate branches),
// whose rounds are deferred (backend.Batch.Deferred): durable with the
// next durable write, which is how a target moved to a candidate's commit
// holds everything the candidate's commits wrote.
//
// On a backend other replicas write too (backend.Shared), a branch they
// contend for is written in turns on its row lock, each turn one round of
// every commit waiting (committer.go, lockedRound), started from what the
// lock hands over: the others' log records, the hint the last writer left
// (hint.go), and the tree nodes on the round's key paths read one level
// per round trip (prefetch.go).
//
// It knows nothing of HTTP, Iceberg JSON or authorization: it must not
// import rest/, policy/, server/ or any Iceberg package. Durable storage is
// reached only through the narrow interface in versionstore/backend.
package versionstore
