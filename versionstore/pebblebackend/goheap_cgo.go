//go:build cgo

package pebblebackend

// GoHeapBytes is how much of Pebble's memory (block cache and memtables,
// at their default sizes) the Go heap holds: none when built with cgo,
// where Pebble allocates them with malloc.
const GoHeapBytes = 0
