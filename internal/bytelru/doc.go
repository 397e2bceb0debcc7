// Package bytelru is the one LRU cache of floe's processes, bounded by
// bytes.
//
// It is the one least-recently-used cache of floe's processes: bounded by
// the approximate bytes its entries hold (and, optionally, by their number),
// safe for concurrent use. The version store's object cache, the Iceberg
// table package's metadata-file cache and the policy engine's decision cache
// are all one of these.
//
// golang-lru's simplelru keeps the recency order; this package adds the
// byte budget, which golang-lru does not have, and the lock. It imports
// nothing of floe.
package bytelru
