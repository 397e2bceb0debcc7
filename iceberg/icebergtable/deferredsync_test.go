package icebergtable

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestDeferredSync: files written under a DeferredSync are readable at
// once and left to its Sync, with the directories made for them; Sync
// empties it, skips a file its writer removed, and keeps everything when
// a sync fails.
func TestDeferredSync(t *testing.T) {
	root := t.TempDir()
	var d DeferredSync
	first := filepath.Join(root, "ns", "t", "metadata", "snap-1.avro")
	second := filepath.Join(root, "ns", "t", "metadata", "snap-2.avro")
	gone := filepath.Join(root, "ns", "t", "metadata", "snap-3.avro")
	for _, name := range []string{first, second, gone} {
		if err := writeLocalFile(name, []byte("x"), newDirSync(), &d); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(name); err != nil || string(b) != "x" {
			t.Fatalf("read back %s: %q, %v", name, b, err)
		}
	}
	if n := d.Pending(); n != 3 {
		t.Fatalf("pending %d files, want 3", n)
	}
	// The made directories' entries are in their parents: all are synced.
	for _, dir := range []string{root, filepath.Join(root, "ns"), filepath.Join(root, "ns", "t")} {
		if !slices.Contains(d.dirs, dir) {
			t.Errorf("directory %s is not to be synced (have %v)", dir, d.dirs)
		}
	}
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(t.Context()); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if n := d.Pending(); n != 0 || len(d.dirs) != 0 {
		t.Fatalf("after Sync: %d files, dirs %v pending", n, d.dirs)
	}

	// A directory that cannot be synced fails Sync, which keeps its files.
	third := filepath.Join(root, "other", "snap-4.avro")
	if err := writeLocalFile(third, []byte("x"), newDirSync(), &d); err != nil {
		t.Fatal(err)
	}
	d.dirs = append(d.dirs, filepath.Join(root, "missing"))
	if err := d.Sync(t.Context()); err == nil {
		t.Fatal("Sync of a missing directory succeeded")
	}
	if n := d.Pending(); n != 1 {
		t.Fatalf("after a failed Sync: %d files pending, want 1", n)
	}

	// Without a DeferredSync nothing is recorded anywhere.
	var none *DeferredSync
	if err := writeLocalFile(filepath.Join(root, "ns", "t", "metadata", "snap-5.avro"), []byte("x"), newDirSync(), none); err != nil {
		t.Fatal(err)
	}
	if n := d.Pending(); n != 1 {
		t.Fatalf("a file written without deferral was recorded: %d pending", n)
	}
}

// TestDeferredSyncLater: SyncLater syncs what was written so far in the
// background while more is written; Sync waits for it and syncs the rest.
// A background sync that fails leaves its files to Sync, which reports it.
func TestDeferredSyncLater(t *testing.T) {
	root := t.TempDir()
	var d DeferredSync
	write := func(name string) {
		t.Helper()
		if err := writeLocalFile(filepath.Join(root, "t", "metadata", name), []byte("x"), newDirSync(), &d); err != nil {
			t.Fatal(err)
		}
	}
	write("a.avro")
	d.SyncLater(t.Context())
	write("b.avro")
	d.SyncLater(t.Context())
	write("c.avro")
	if err := d.Sync(t.Context()); err != nil {
		t.Fatalf("sync: %v", err)
	}
	if n := d.Pending(); n != 0 || len(d.dirs) != 0 {
		t.Fatalf("after Sync: %d files, dirs %v pending", n, d.dirs)
	}

	write("d.avro")
	d.mu.Lock()
	d.dirs = append(d.dirs, filepath.Join(root, "missing"))
	d.mu.Unlock()
	d.SyncLater(t.Context())
	if err := d.Sync(t.Context()); err == nil {
		t.Fatal("Sync after a background sync of a missing directory succeeded")
	}
	if n := d.Pending(); n != 1 {
		t.Fatalf("after a failed background sync and Sync: %d files pending, want 1", n)
	}
}
