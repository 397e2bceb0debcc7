// Package feedevent builds the change feed's events that are not
// reference moves: a merge request's change of state, a garbage collection
// run, a policy bundle's activation.
//
// Their writers (the merge queue, the garbage collector, the composition
// root) append each with versionstore.AppendEvent in the same durable
// write as the change itself; the change feed (catalog/changefeed) reads
// them back. It sits below both, so a writer need not import the feed. It
// imports only versionstore.
package feedevent
