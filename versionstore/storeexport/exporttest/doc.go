// Package exporttest builds histories and checks copies of a store for
// storeexport's and storebackup's tests.
//
// It builds histories and write load on a version store for the tests of
// storeexport and storebackup, and checks a copy of a store against the
// commits acknowledged before it was taken. It is test tooling: nothing but
// tests imports it.
//
// It imports the version store; it must not be imported by product code.
package exporttest
