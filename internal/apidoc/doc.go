// Package apidoc holds the documents floe's own API answers and its CLI
// client reads.
//
// It holds documents floe's own API answers (rest/floeapi) that the server's
// packages produce and the CLI's client (internal/floeclient) reads: the
// garbage collection report (package gc), the merge queue's requests and
// report (package mergequeue), the maintenance lock and table statistics
// (package maintenance), and the backup and export reports (package
// storebackup). Those packages alias these types, so each document is
// defined once and the client reads it without importing the server's code,
// its store or iceberg-go.
//
// It imports only the standard library.
package apidoc
