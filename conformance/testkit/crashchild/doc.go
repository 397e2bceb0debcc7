// Package crashchild runs a test's child in its own process and kills it
// with SIGKILL.
//
// It runs a test binary's own child test in a process of its own and kills
// it with SIGKILL: the crash tests' way to stop a writer mid-flight
// (changefeed, eventhooks), then check what a restart recovers against what
// the child printed before it died.
//
// It imports only the standard library and testing; only tests import it.
package crashchild
