// Package backend defines what the version store needs from durable storage.
//
// Immutable, content-addressed objects (get, has, put-if-absent), a small
// set of named references updated by compare-and-swap, an append-only
// reference log, and small records that may be written by compare-and-swap,
// all changed together by one atomic, durable batch.
//
// It is deliberately narrow so that an embedded engine (Pebble) and a shared
// SQL database can both implement it without the version store changing. This
// package must not import the version store, HTTP, or Iceberg packages.
package backend
