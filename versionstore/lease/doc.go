// Package lease is a named, expiring lease held by one holder across every
// replica sharing a store.
//
// It is a named, expiring lease held by one holder at a time, kept in a
// version-store record and moved by its compare-and-swap, so that it holds
// across every floe replica sharing a store: one merge-queue committer per
// branch, one garbage collector at a time. Every acquisition by a new holder
// raises the lease's epoch, and Fence turns a lease into a record a commit
// can carry so that a deposed holder's late commit is refused (fencing).
//
// It imports only the version store: never HTTP, Iceberg or the APIs.
package lease
