// Package changefeed derives the catalog's change feed, events by resumable
// cursor, from the store's history.
//
// It is floe's catalog change feed: the events a consumer follows to learn
// what happened in the catalog (tables and views created, updated, renamed,
// dropped; namespace changes; branches and tags created, moved, deleted,
// expired; commits, merges with each table's classification, and
// transplants; merge-queue state changes, GC runs and policy bundle
// activations), each named by a cursor it can resume from.
//
// The feed is the catalog's history, not a second copy of it. Events are
// derived, on demand and deterministically, from what the version store
// already keeps durably: the reference log (every move of every reference,
// and the events written beside the history in the same durable write as
// the change they report, numbered by the backend in the order they become
// visible) and the immutable commits, contents and event objects the log
// points at. Nothing is written to produce an event beyond the log entry
// its change writes, so an event can exist only for a change that became
// durable, and no crash can lose one (cursor.go states the invariant).
//
// It owns the event model (event.go), the cursor (cursor.go), the
// derivation of events from one reference-log entry (derive.go), paging
// and waiting for new entries (feed.go), and reading snapshot summaries of
// Iceberg tables (summary.go). Deciding who may see an event is the
// caller's: a Query carries the filter the API builds from the policy.
//
// It sits beside the merge engine, above versionstore and icebergtable:
// it must not import net/http, any rest/ package, policy, server or
// assemble (checked by TestLayering).
package changefeed
