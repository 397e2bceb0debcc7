// Package backendtest is the suite every storage backend of the version
// store must pass.
//
// It is the conformance suite for backend.Backend: the behaviour every
// storage backend (Pebble, PostgreSQL, ...) must show so the version store
// can run on any of them unchanged. Backends call RunConformance from their
// own tests.
//
// It depends only on versionstore/backend and the standard library, never on
// a particular backend or on the version store.
package backendtest
