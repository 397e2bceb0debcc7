// Package inorder runs work in the background one piece after another, in
// the order it was started, and waits for all of it.
//
// It owns one small thing: a chain of background functions that a caller
// can extend and wait on from any goroutine, which a sync.WaitGroup cannot
// (it must not be added to while waited on). The merge queue's worker runs
// a landed batch's hygiene on one while it builds the next batch; a
// deferred file sync (icebergtable.DeferredSync) syncs each step's files
// on one while the next step is written.
//
// It depends on the standard library only, and must not import anything
// of floe's.
package inorder
