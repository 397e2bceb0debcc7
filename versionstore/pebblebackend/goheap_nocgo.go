//go:build !cgo

package pebblebackend

// GoHeapBytes is how much of Pebble's memory (block cache and memtables,
// at their default sizes) the Go heap holds: all of it when built without
// cgo, as the static binary and the container image are, since Pebble
// then allocates them with make. A memory limit must leave room for it.
const GoHeapBytes = defaultCacheSize + 2*memTableSize
