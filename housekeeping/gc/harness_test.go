package gc_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/rowlake"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/housekeeping/gc"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// lake is a real floe with tables written by iceberg-go on catalog
// branches, and the rows every (ref, table) is expected to hold.
type lake struct {
	*rowlake.Lake // the tables, written through srv, and their rows
	t             *testing.T
	srv           *testserver.Server
	whs           icebergtable.Warehouses
}

func newLake(t *testing.T) *lake {
	return newLakeAt(t, testserver.Options{}, nil)
}

// newLakeAt is newLake with the server's options given, and the
// warehouse the collector sweeps; nil is the server's local one.
func newLakeAt(t *testing.T, opts testserver.Options, wh *icebergtable.Config) *lake {
	srv := testserver.Start(t, opts)
	cfg := icebergtable.Config{Name: "lake", Location: srv.Warehouse}
	if wh != nil {
		cfg = *wh
	}
	w, err := icebergtable.OpenWarehouse(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &lake{Lake: rowlake.New(t, srv.URL), t: t, srv: srv, whs: icebergtable.Warehouses{w}}
}

// branch makes a branch (or tag) at from's head, expecting what from holds.
func (l *lake) branch(name, from string, typ versionstore.RefType) {
	l.t.Helper()
	f, err := l.srv.Store.GetRef(from)
	if err != nil {
		l.t.Fatal(err)
	}
	l.refAt(name, f.Head, typ)
	l.ExpectCopy(name, from)
}

func (l *lake) refAt(name string, at versionstore.Hash, typ versionstore.RefType) {
	l.t.Helper()
	if _, err := l.srv.Store.CreateRef(l.t.Context(), versionstore.CreateRefRequest{Name: name, Type: typ, Target: at}); err != nil {
		l.t.Fatal(err)
	}
}

func (l *lake) deleteRef(name string) {
	l.t.Helper()
	r, err := l.srv.Store.GetRef(name)
	if err != nil {
		l.t.Fatal(err)
	}
	if err := l.srv.Store.DeleteRef(l.t.Context(), versionstore.DeleteRefRequest{Name: name, Expected: r.Head}); err != nil {
		l.t.Fatal(err)
	}
	delete(l.Rows, name)
}

// age sets every file of the warehouse to be d old, as if written then.
func (l *lake) age(d time.Duration) {
	l.t.Helper()
	old := time.Now().Add(-d)
	err := filepath.WalkDir(l.srv.WarehouseDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		l.t.Fatal(err)
	}
}

// files lists the warehouse's files.
func (l *lake) files() map[string]bool {
	l.t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(l.srv.WarehouseDir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			out[p] = true
		}
		return err
	})
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

// tableDir is the local directory of a table on ref.
func (l *lake) tableDir(ref, name string) string {
	l.t.Helper()
	return strings.TrimPrefix(l.Load(ref, name).Location(), "file://")
}

func (l *lake) collector(opts gc.Options) *gc.Collector {
	l.t.Helper()
	opts.Store, opts.Warehouses = l.srv.Store, l.whs
	if opts.TempDir == "" {
		opts.TempDir = l.t.TempDir()
	}
	c, err := gc.New(opts)
	if err != nil {
		l.t.Fatal(err)
	}
	return c
}

func under(files map[string]bool, dir string) int {
	n := 0
	for f := range files {
		if strings.HasPrefix(f, dir+"/") {
			n++
		}
	}
	return n
}
