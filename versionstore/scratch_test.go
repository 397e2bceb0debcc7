package versionstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// openOn opens a store on Pebble over fs (a crashable one, or a crash
// image of it), closed when the test ends.
func openOn(t *testing.T, fs vfs.FS, opts versionstore.Options) *versionstore.Store {
	t.Helper()
	be, err := pebblebackend.Open("/db", pebblebackend.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	s, err := versionstore.Open(t.Context(), be, opts)
	if err != nil {
		t.Fatal(errors.Join(err, be.Close()))
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestScratchRefs: writes to scratch refs (Options.ScratchRefPrefixes) are
// acknowledged before they are durable, as the merge queue's candidate
// branches are. On a crashable file system (Pebble's, which loses every
// write not fsynced): a crash before any durable write may lose the
// scratch branch and its commits, and the store opens consistent without
// them; once a durable write moved main to the scratch branch's head,
// that head and every object it names survive the crash. The reference
// log shows scratch moves only once they are durable.
func TestScratchRefs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	fs := vfs.NewCrashableMem()
	open := func(fs vfs.FS) *versionstore.Store {
		return openOn(t, fs, versionstore.Options{ScratchRefPrefixes: []string{"scratch/"}})
	}
	s := open(fs)
	ns := versionstore.ContentKey{"ns"}
	root, err := s.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	base, err := s.Commit(ctx, versionstore.CommitRequest{Branch: "main", Expected: root.Head, Committer: "t",
		Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: ns, Content: &versionstore.Content{Type: versionstore.Namespace}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: "scratch/c", Type: versionstore.Branch, Target: base.Commit.Hash}); err != nil {
		t.Fatal(err)
	}
	head := base.Commit.Hash
	const tables = 5
	for i := range tables {
		res, err := s.Commit(ctx, versionstore.CommitRequest{Branch: "scratch/c", Expected: head, Committer: "t",
			Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"ns", fmt.Sprintf("t%d", i)},
				Content: &versionstore.Content{Type: versionstore.IcebergTable, MetadataLocation: fmt.Sprintf("file:///w/ns/t%d/v1.json", i)}}}})
		if err != nil {
			t.Fatal(err)
		}
		head = res.Commit.Hash
	}
	// Readers of the branch see it at once.
	if r, err := s.GetRef("scratch/c"); err != nil || r.Head != head {
		t.Fatalf("scratch/c = %v, %v; want %s", r, err, head)
	}
	// Not yet durable, so not in the reference log.
	if entries, _, err := s.RefLog(ctx, "scratch/c", 100, ""); err != nil || len(entries) != 0 {
		t.Fatalf("reference log of scratch/c before a durable write: %d entries, %v; want none", len(entries), err)
	}

	rng := rand.New(rand.NewPCG(7, 11))
	before := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rng})

	if _, err := s.AssignRef(ctx, versionstore.AssignRefRequest{Name: "main", Expected: base.Commit.Hash, Target: head}); err != nil {
		t.Fatal(err)
	}
	entries, _, err := s.RefLog(ctx, "scratch/c", 100, "")
	if err != nil || len(entries) != 1+tables {
		t.Fatalf("reference log of scratch/c after a durable write: %d entries, %v; want %d", len(entries), err, 1+tables)
	}
	after := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rng})

	t.Run("crash before a durable write", func(t *testing.T) {
		s := open(before)
		if r, err := s.GetRef("main"); err != nil || r.Head != base.Commit.Hash {
			t.Fatalf("main = %v, %v; want %s", r, err, base.Commit.Hash)
		}
		if r, err := s.GetRef("scratch/c"); err == nil && r.Head == head {
			t.Fatalf("scratch/c survived at %s a crash that lost every unsynced write", head)
		}
	})
	t.Run("crash after a durable write", func(t *testing.T) {
		s := open(after)
		r, err := s.GetRef("main")
		if err != nil || r.Head != head {
			t.Fatalf("main = %v, %v; want %s", r, err, head)
		}
		for i := range tables {
			c, err := s.GetContent(context.Background(), head, versionstore.ContentKey{"ns", fmt.Sprintf("t%d", i)})
			if err != nil || c.MetadataLocation != fmt.Sprintf("file:///w/ns/t%d/v1.json", i) {
				t.Fatalf("table t%d at main's head: %+v, %v", i, c, err)
			}
		}
		if r, err := s.GetRef("scratch/c"); err != nil || r.Head != head {
			t.Fatalf("scratch/c = %v, %v; want %s (written before main's durable move)", r, err, head)
		}
	})
}

// TestCachedRecords: a cached record (PutCachedRecord) is read at once,
// may be lost by a crash before any durable write, and survives one after
// a durable write returned.
func TestCachedRecords(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	fs := vfs.NewCrashableMem()
	open := func(fs vfs.FS) *versionstore.Store { return openOn(t, fs, versionstore.Options{}) }
	s := open(fs)
	if err := s.PutCachedRecord(ctx, versionstore.Record{Key: "cache/a", Value: []byte("a1")}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.GetRecord(ctx, "cache/a"); err != nil || string(r.Value) != "a1" {
		t.Fatalf("cache/a = %v, %v; want a1 at once", r, err)
	}
	rng := rand.New(rand.NewPCG(3, 5))
	before := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rng})
	if err := s.PutRecord(ctx, versionstore.Record{Key: "durable/b", Value: []byte("b1")}); err != nil {
		t.Fatal(err)
	}
	after := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0, RNG: rng})

	if _, err := open(before).GetRecord(ctx, "cache/a"); !errors.Is(err, versionstore.ErrRecordNotFound) {
		t.Fatalf("cache/a after a crash that lost every unsynced write: %v, want not found", err)
	}
	s = open(after)
	for key, want := range map[string]string{"cache/a": "a1", "durable/b": "b1"} {
		if r, err := s.GetRecord(ctx, key); err != nil || string(r.Value) != want {
			t.Fatalf("%s after a crash that followed a durable write: %v, %v; want %s", key, r, err, want)
		}
	}
}
