package catalog

import (
	"path/filepath"
	"testing"

	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// openStore opens a version store over Pebble in t's temporary directory,
// closed when t ends.
func openStore(t *testing.T) *versionstore.Store {
	t.Helper()
	be, err := pebblebackend.Open(filepath.Join(t.TempDir(), "data"), pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := versionstore.Open(t.Context(), be, versionstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	return store
}

func TestNewRefusesBadWarehouses(t *testing.T) {
	store := openStore(t)
	for name, whs := range map[string][]Warehouse{
		"none":       nil,
		"empty name": {{Name: "", Location: "file:///srv/lake"}},
		"@":          {{Name: "a@b", Location: "file:///srv/lake"}},
		"|":          {{Name: "a|b", Location: "file:///srv/lake"}},
		"/":          {{Name: "a/b", Location: "file:///srv/lake"}},
		"twice":      {{Name: "lake", Location: "file:///srv/lake"}, {Name: "lake", Location: "file:///srv/other"}},
	} {
		if _, err := New(store, Config{Warehouses: whs}, Options{}); err == nil {
			t.Errorf("%s: New accepted %v", name, whs)
		}
	}
}

// TestWarehousesShareOneCache: the warehouses are opened once, in the
// order configured, over one metadata cache (none when turned off).
func TestWarehousesShareOneCache(t *testing.T) {
	store := openStore(t)
	whs := []Warehouse{{Name: "lake", Location: "file:///srv/lake"}, {Name: "other", Location: "file:///srv/other"}}
	for _, tc := range []struct {
		bytes  int64
		cached bool
	}{{0, true}, {1 << 20, true}, {-1, false}} {
		c, err := New(store, Config{Warehouses: whs, MetadataCacheBytes: tc.bytes}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if (c.MetadataCache() != nil) != tc.cached {
			t.Errorf("MetadataCacheBytes %d: cache %v", tc.bytes, c.MetadataCache())
		}
		got := c.Warehouses()
		if len(got) != 2 || got[0].Name() != "lake" || got[1].Name() != "other" {
			t.Fatalf("warehouses %v", got)
		}
		if w, ok := c.Warehouse("other"); !ok || w != got[1] {
			t.Errorf("Warehouse(other) = %v, %v", w, ok)
		}
		if _, ok := c.Warehouse("nope"); ok {
			t.Error("Warehouse(nope) found")
		}
	}
}
