package pebblebackend

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// benchCommit is the shape of one version-store commit at its smallest: one
// new object and the ref moved onto it, with a log record.
func benchCommit(ref string, prev []byte, n uint64) (backend.Batch, []byte) {
	var data [64]byte
	copy(data[:], ref)
	binary.BigEndian.PutUint64(data[56:], n)
	id := backend.ObjectID(sha256.Sum256(data[:]))
	return backend.Batch{
		Objects: []backend.Object{{ID: id, Data: data[:]}},
		Refs:    []backend.RefUpdate{{Name: ref, Expected: prev, New: id[:]}},
		Log:     [][]byte{id[:]},
	}, id[:]
}

// BenchmarkApplySynced measures one writer committing synced batches on the
// real filesystem: roughly one fsync per commit.
func BenchmarkApplySynced(b *testing.B) {
	be := mustOpen(b, b.TempDir(), Options{})
	closeOnCleanup(b, be)
	ctx := b.Context()
	var prev []byte
	var n uint64
	for b.Loop() {
		batch, next := benchCommit("main", prev, n)
		if err := be.Apply(ctx, batch); err != nil {
			b.Fatal(err)
		}
		prev = next
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkApplySyncedParallel measures 64 writers, each moving its own ref,
// on the real filesystem. Their batches share WAL fsyncs, so commits/s should
// be well above BenchmarkApplySynced's.
func BenchmarkApplySyncedParallel(b *testing.B) {
	const writers = 64
	be := mustOpen(b, b.TempDir(), Options{})
	closeOnCleanup(b, be)
	ctx := b.Context()
	var (
		next atomic.Int64 // commits handed out so far
		wg   sync.WaitGroup
	)
	b.ResetTimer()
	for w := range writers {
		wg.Go(func() {
			ref := fmt.Sprintf("branch-%02d", w)
			var prev []byte
			var n uint64
			for next.Add(1) <= int64(b.N) {
				batch, id := benchCommit(ref, prev, n)
				if err := be.Apply(ctx, batch); err != nil {
					b.Error(err)
					return
				}
				prev = id
				n++
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}
