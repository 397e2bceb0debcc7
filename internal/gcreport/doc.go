// Package gcreport is the document a garbage collection run reports
// (package gc) and floe's API answers (POST /api/floe/v1/gc, GET
// /api/floe/v1/gc/last): apart from the collector so that the CLI's client
// (internal/floeclient) reads it without importing the collector, its
// store and iceberg-go.
//
// It imports only the standard library.
package gcreport
