package pebblebackend

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// TestCheckpointHoldsEveryAppliedBatch writes batches without syncing (so
// they may still sit in Pebble's WAL buffer) and checkpoints after each:
// every checkpoint opens as a store holding every batch applied before it,
// which is what WithFlushedWAL guarantees. Synced writes (production) are
// on disk before Apply returns anyway.
func TestCheckpointHoldsEveryAppliedBatch(t *testing.T) {
	dir := t.TempDir()
	b := mustOpen(t, filepath.Join(dir, "db"), Options{NoSync: true})
	closeOnCleanup(t, b)
	var prev []byte
	for i := range 20 {
		v := []byte(fmt.Sprintf("head-%d", i))
		data := []byte(fmt.Sprintf("object %d", i))
		id := backend.ObjectID(sha256.Sum256(data))
		if err := b.Apply(t.Context(), backend.Batch{
			Objects: []backend.Object{{ID: id, Data: data}},
			Refs:    []backend.RefUpdate{{Name: "main", Expected: prev, New: v}},
			Log:     [][]byte{v},
		}); err != nil {
			t.Fatal(err)
		}
		prev = v
		cp := filepath.Join(dir, fmt.Sprintf("cp%d", i))
		if err := b.Checkpoint(t.Context(), cp); err != nil {
			t.Fatal(err)
		}
		c := mustOpen(t, cp, Options{})
		got, err := c.GetRef(t.Context(), "main")
		if err != nil || string(got) != string(v) {
			t.Fatalf("checkpoint %d: main is %q, %v; want %q", i, got, err, v)
		}
		if ok, err := c.HasObject(t.Context(), id); err != nil || !ok {
			t.Fatalf("checkpoint %d lacks the object of its last batch: %v", i, err)
		}
		log, err := c.ReadLog(t.Context(), 0, 100)
		if err != nil || len(log) != i+1 {
			t.Fatalf("checkpoint %d: %d log records, %v", i, len(log), err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Checkpoint(t.Context(), filepath.Join(dir, "cp0")); !errors.Is(err, os.ErrExist) {
		t.Fatalf("checkpoint into an existing directory: %v", err)
	}
}
