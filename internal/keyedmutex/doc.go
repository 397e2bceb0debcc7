// Package keyedmutex is a table of mutexes named by keys, taken in a global
// order, waits bounded by a context.
//
// It owns one kind of lock: a table of mutexes named by string keys, taken
// several at a time in a global order, with waits that end with their
// context. The Pebble backend locks the refs a batch updates with it; the
// Iceberg REST facade the tables a commit changes.
//
// It depends on the standard library only, and must not import anything
// of floe's.
package keyedmutex
