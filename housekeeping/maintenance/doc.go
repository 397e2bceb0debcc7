// Package maintenance owns floe's per-table advisory maintenance lock and
// the per-table maintenance statistics.
//
// A lock is a lease on one table on one catalog branch, kept as a store
// record moved only by compare-and-swap: acquiring succeeds when no live
// lease exists (absent, released or expired), so of two jobs racing for
// the same table exactly one wins and the other skips its cycle; renewing
// and releasing need the lease's token, which only the acquirer was
// given. A crashed job's lease simply expires. The Iceberg REST facade
// asks CheckCommit before each maintenance commit (a compaction or
// manifest rewrite's replace snapshot, a snapshot expiry) so that, while a
// lease is held, only its holder's maintenance commits land. Statistics
// read a table's current metadata: snapshots per operation over a window,
// the current snapshot's totals, and the lock.
//
// It sits below the APIs: it imports the version store, the Iceberg table
// package and iceberg-go, never net/http, rest/ or assemble.
package maintenance
