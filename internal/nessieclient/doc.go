// Package nessieclient is the CLI's typed client of floe's Nessie REST API
// v2.
//
// It is a small typed client for floe's Project Nessie REST API v2 (served
// under /api/v2): references, entries, contents, the commit log, diffs,
// merges and transplants, with Nessie's JSON shapes and content-key path
// encoding. The floe command-line client is built on it.
//
// It talks HTTP only and must not import floe's server-side packages
// (rest/, server/, versionstore/): it is what a remote user runs.
package nessieclient
