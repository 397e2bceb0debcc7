package pebblebackend

import (
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// TestFormatMajorVersionPinned: a store is created at the pinned Pebble
// format, a store written at that format by a plain Pebble opens with its
// data and stays at it, and an older store is raised to exactly the pinned
// version, never to whatever the Pebble dependency calls newest.
func TestFormatMajorVersionPinned(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	quiet := pebbleLogger{log: discardLogger()}

	b := mustOpen(t, "/new", Options{FS: fs})
	closeOnCleanup(t, b)
	if got := b.db.FormatMajorVersion(); got != FormatMajorVersion {
		t.Fatalf("new store at format %d, want the pinned %d", got, FormatMajorVersion)
	}

	for _, created := range []pebble.FormatMajorVersion{FormatMajorVersion, pebble.FormatMinSupported} {
		dir := "/at-" + created.String()
		db, err := pebble.Open(dir, &pebble.Options{FS: fs, FormatMajorVersion: created, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Set([]byte(formatKey), []byte(formatVersion), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := db.Set(refKey("main"), []byte("head"), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		b := mustOpen(t, dir, Options{FS: fs})
		if got := b.db.FormatMajorVersion(); got != FormatMajorVersion {
			t.Errorf("store created at %s opened at format %s, want the pinned %s", created, got, FormatMajorVersion)
		}
		if v, err := b.GetRef(ctx, "main"); err != nil || string(v) != "head" {
			t.Errorf("store created at %s: ref main = %q, %v", created, v, err)
		}
		if err := b.Apply(ctx, backend.Batch{Refs: []backend.RefUpdate{{Name: "main", Expected: []byte("head"), New: []byte("next")}}}); err != nil {
			t.Errorf("store created at %s: write: %v", created, err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
