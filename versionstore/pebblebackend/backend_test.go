package pebblebackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/floe-catalog/floe/versionstore/backend"
	"github.com/floe-catalog/floe/versionstore/backend/backendtest"
)

func TestConformanceDisk(t *testing.T) {
	backendtest.RunConformance(t, func(t *testing.T, dir string) backend.Backend {
		return mustOpen(t, dir, Options{})
	})
}

func TestConformanceMem(t *testing.T) {
	fs := vfs.NewMem()
	backendtest.RunConformance(t, func(t *testing.T, dir string) backend.Backend {
		return mustOpen(t, dir, Options{FS: fs})
	})
}

func mustOpen(t testing.TB, dir string, opts Options) *Backend {
	t.Helper()
	b, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("open %s: %v", dir, err)
	}
	return b
}

func closeOnCleanup(t testing.TB, b *Backend) {
	t.Cleanup(func() {
		if err := b.Close(); err != nil && !errors.Is(err, backend.ErrClosed) {
			t.Errorf("close: %v", err)
		}
	})
}

// TestOpenRejectsUnknownFormat tampers with a closed database through Pebble
// directly and checks Open refuses it rather than misreading it.
func TestOpenRejectsUnknownFormat(t *testing.T) {
	for _, tc := range []struct {
		name    string
		create  bool // create a floe store first
		tamper  func(db *pebble.DB) error
		wantMsg string
	}{
		{
			name:    "future version",
			create:  true,
			tamper:  func(db *pebble.DB) error { return db.Set([]byte(formatKey), []byte("floe-pebble-v99"), pebble.Sync) },
			wantMsg: `format marker is "floe-pebble-v99"`,
		},
		{
			name:    "garbage marker",
			create:  true,
			tamper:  func(db *pebble.DB) error { return db.Set([]byte(formatKey), []byte{0xff, 0x00}, pebble.Sync) },
			wantMsg: `format marker is "\xff\x00"`,
		},
		{
			name:    "marker deleted",
			create:  true,
			tamper:  func(db *pebble.DB) error { return db.Delete([]byte(formatKey), pebble.Sync) },
			wantMsg: "has data but no format marker",
		},
		{
			name:    "foreign database",
			tamper:  func(db *pebble.DB) error { return db.Set([]byte("someone else's key"), []byte("v"), pebble.Sync) },
			wantMsg: "has data but no format marker",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewMem()
			const dir = "/db"
			if tc.create {
				b := mustOpen(t, dir, Options{FS: fs})
				if err := b.Apply(t.Context(), backend.Batch{Refs: []backend.RefUpdate{{Name: "main", New: []byte("m")}}}); err != nil {
					t.Fatal(err)
				}
				if err := b.Close(); err != nil {
					t.Fatal(err)
				}
			}
			db, err := pebble.Open(dir, &pebble.Options{FS: fs, Logger: pebbleLogger{log: discardLogger()}})
			if err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(tc.tamper(db), db.Close()); err != nil {
				t.Fatal(err)
			}

			b, err := Open(dir, Options{FS: fs})
			if err == nil {
				_ = b.Close()
				t.Fatal("open succeeded, want ErrUnknownFormat")
			}
			if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("open: got error %q, want ErrUnknownFormat mentioning %q", err, tc.wantMsg)
			}
			// The failed Open must have released the database.
			db, err = pebble.Open(dir, &pebble.Options{FS: fs, Logger: pebbleLogger{log: discardLogger()}})
			if err != nil {
				t.Fatalf("reopen after failed Open: %v", err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestOpenWritesFormatMarker(t *testing.T) {
	fs := vfs.NewMem()
	b := mustOpen(t, "/db", Options{FS: fs})
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := pebble.Open("/db", &pebble.Options{FS: fs, Logger: pebbleLogger{log: discardLogger()}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	v, closer, err := db.Get([]byte(formatKey))
	if err != nil {
		t.Fatalf("get format marker: %v", err)
	}
	defer func() { _ = closer.Close() }()
	if string(v) != formatVersion {
		t.Fatalf("format marker: got %q, want %q", v, formatVersion)
	}
}

func TestApplyRejectsDuplicateRef(t *testing.T) {
	b := mustOpen(t, "/db", Options{FS: vfs.NewMem()})
	closeOnCleanup(t, b)
	err := b.Apply(t.Context(), backend.Batch{Refs: []backend.RefUpdate{
		{Name: "main", New: []byte("a")},
		{Name: "main", New: []byte("b")},
	}})
	if err == nil || !strings.Contains(err.Error(), `ref "main" updated twice`) {
		t.Fatalf("apply: got error %v, want duplicate ref error", err)
	}
	if _, err := b.GetRef(t.Context(), "main"); !errors.Is(err, backend.ErrRefNotFound) {
		t.Fatalf("get ref: got %v, want ErrRefNotFound", err)
	}
}

func TestNonPositiveLimit(t *testing.T) {
	b := mustOpen(t, "/db", Options{FS: vfs.NewMem()})
	closeOnCleanup(t, b)
	for _, limit := range []int{0, -1} {
		if _, err := b.ReadLog(t.Context(), 0, limit); err == nil {
			t.Errorf("ReadLog limit %d: got nil error", limit)
		}
		if _, err := b.ObjectsWithPrefix(t.Context(), nil, limit); err == nil {
			t.Errorf("ObjectsWithPrefix limit %d: got nil error", limit)
		}
	}
}

// TestApplyHonoursContextWhileWaiting holds a ref's lock as a slow writer
// would and checks a waiting Apply gives up when its context ends, writing
// nothing.
func TestApplyHonoursContextWhileWaiting(t *testing.T) {
	b := mustOpen(t, "/db", Options{FS: vfs.NewMem()})
	closeOnCleanup(t, b)
	release, err := b.locks.Lock(t.Context(), []string{string(refKey("main"))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- b.Apply(ctx, backend.Batch{
			Refs: []backend.RefUpdate{{Name: "main", New: []byte("m")}},
			Log:  [][]byte{[]byte("l")},
		})
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("apply: got %v, want context.Canceled", err)
	}
	release()
	if _, err := b.GetRef(t.Context(), "main"); !errors.Is(err, backend.ErrRefNotFound) {
		t.Fatalf("get ref: got %v, want ErrRefNotFound", err)
	}
	if n := b.locks.Len(); n != 0 {
		t.Fatalf("lock table holds %d entries after all locks were released", n)
	}
}

// TestCrash takes crash images of the filesystem while writers are busy and
// checks, on each image, that every write acknowledged before the crash
// survived, that each batch survived whole or not at all, and that the
// surviving log is a gap-free prefix (seq n+1 durable implies n durable).
//
// With deferred, every other batch of each writer is Deferred: it counts
// as acknowledged only once the writer's next, synced batch returned, since
// that batch's flush is what makes it durable.
func TestCrash(t *testing.T) {
	for _, deferred := range []bool{false, true} {
		for _, unsynced := range []int{0, 50, 100} {
			t.Run(fmt.Sprintf("unsynced=%d%%/deferred=%v", unsynced, deferred), func(t *testing.T) {
				testCrash(t, unsynced, deferred)
			})
		}
	}
}

func testCrash(t *testing.T, unsyncedPercent int, deferred bool) {
	const writers, crashes = 16, 4
	fs := vfs.NewCrashableMem()
	b := mustOpen(t, "/db", Options{FS: fs})
	closeOnCleanup(t, b)

	var (
		wg    sync.WaitGroup
		stop  atomic.Bool
		acked [writers]atomic.Int64 // versions acknowledged so far
	)
	for w := range writers {
		wg.Go(func() {
			name := fmt.Sprintf("w%02d", w)
			var prev []byte
			for i := 0; !stop.Load(); i++ {
				val := []byte(fmt.Sprintf("%s v%d", name, i))
				deferThis := deferred && i%2 == 0
				err := b.Apply(t.Context(), backend.Batch{
					Objects:  []backend.Object{{ID: [32]byte{byte(w), byte(i >> 8), byte(i)}, Data: val}},
					Refs:     []backend.RefUpdate{{Name: name, Expected: prev, New: val}},
					Log:      [][]byte{val},
					Deferred: deferThis,
				})
				if err != nil {
					t.Errorf("%s: apply %d: %v", name, i, err)
					return
				}
				if !deferThis {
					acked[w].Store(int64(i + 1))
				}
				prev = val
			}
		})
	}

	rng := rand.New(rand.NewPCG(1, uint64(unsyncedPercent)))
	type image struct {
		fs    *vfs.MemFS
		acked [writers]int64
	}
	var images []image
	for range crashes {
		time.Sleep(20 * time.Millisecond)
		var img image
		// Read the acknowledgements first: everything counted here was
		// durable before the image is taken.
		for w := range writers {
			img.acked[w] = acked[w].Load()
		}
		img.fs = fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: unsyncedPercent, RNG: rng})
		images = append(images, img)
	}
	stop.Store(true)
	wg.Wait()
	if t.Failed() {
		return
	}

	for i, img := range images {
		t.Run(fmt.Sprintf("image%d", i), func(t *testing.T) {
			checkCrashImage(t, img.fs, img.acked[:])
		})
	}
}

func checkCrashImage(t *testing.T, fs *vfs.MemFS, acked []int64) {
	b := mustOpen(t, "/db", Options{FS: fs})
	closeOnCleanup(t, b)
	ctx := t.Context()

	// The log must be a gap-free prefix: no batch failed, so seqs 1..n.
	var recs []backend.LogRecord
	for before := uint64(0); ; {
		page, err := b.ReadLog(ctx, before, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		recs = append(recs, page...)
		before = page[len(page)-1].Seq
	}
	for i, r := range recs {
		if want := uint64(len(recs) - i); r.Seq != want {
			t.Fatalf("log record %d from newest has seq %d, want %d (gap in durable log)", i, r.Seq, want)
		}
	}
	logged := make(map[string]int64) // writer -> versions in the log
	for i := len(recs) - 1; i >= 0; i-- {
		name, _, _ := strings.Cut(string(recs[i].Value), " ")
		if want := fmt.Sprintf("%s v%d", name, logged[name]); string(recs[i].Value) != want {
			t.Fatalf("log: %q out of order, want %q", recs[i].Value, want)
		}
		logged[name]++
	}

	var ackedTotal int64
	for _, a := range acked {
		ackedTotal += a
	}
	t.Logf("%d log records survived, %d were acknowledged before the crash", len(recs), ackedTotal)
	for w, ack := range acked {
		name := fmt.Sprintf("w%02d", w)
		n := logged[name]
		if n < ack {
			t.Fatalf("%s: %d versions survived, %d were acknowledged before the crash", name, n, ack)
		}
		// Batch atomicity: the ref and the object match the log.
		v, err := b.GetRef(ctx, name)
		switch {
		case n == 0 && errors.Is(err, backend.ErrRefNotFound):
			continue
		case err != nil:
			t.Fatalf("get ref %s: %v", name, err)
		}
		want := fmt.Sprintf("%s v%d", name, n-1)
		if string(v) != want {
			t.Fatalf("ref %s = %q, but the log's last record for it is %q", name, v, want)
		}
		i := n - 1
		data, err := b.GetObject(ctx, backend.ObjectID{byte(w), byte(i >> 8), byte(i)})
		if err != nil || !bytes.Equal(data, v) {
			t.Fatalf("object of %s: got %q, %v; want %q", want, data, err, want)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	for _, tc := range []struct{ in, want []byte }{
		{[]byte{0x01}, []byte{0x02}},
		{[]byte{0x01, 0x00}, []byte{0x01, 0x01}},
		{[]byte{0x01, 0xab, 0xff}, []byte{0x01, 0xac}},
		{[]byte{0x01, 0xff, 0xff}, []byte{0x02}},
	} {
		if got := prefixEnd(tc.in); !bytes.Equal(got, tc.want) {
			t.Errorf("prefixEnd(%x) = %x, want %x", tc.in, got, tc.want)
		}
	}
}

// TestApplyLargeBatch commits a batch above Pebble's large-batch threshold,
// which takes a different path through the commit pipeline (the batch is
// queued as its own memtable), and checks it through a reopen.
func TestApplyLargeBatch(t *testing.T) {
	fs := vfs.NewMem()
	b := mustOpen(t, "/db", Options{FS: fs})
	closeOnCleanup(t, b)
	big := bytes.Repeat([]byte("floe"), 4<<20) // 16 MiB
	id := backend.ObjectID{0x42}
	err := b.Apply(t.Context(), backend.Batch{
		Objects: []backend.Object{{ID: id, Data: big}},
		Refs:    []backend.RefUpdate{{Name: "main", New: id[:]}},
		Log:     [][]byte{[]byte("big")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = mustOpen(t, "/db", Options{FS: fs})
	closeOnCleanup(t, b)
	got, err := b.GetObject(t.Context(), id)
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("get big object: %d bytes, %v; want %d bytes", len(got), err, len(big))
	}
	recs, err := b.ReadLog(t.Context(), 0, 10)
	if err != nil || len(recs) != 1 || recs[0].Seq != 1 || string(recs[0].Value) != "big" {
		t.Fatalf("read log: got %v, %v; want one record \"big\" with seq 1", recs, err)
	}
}
