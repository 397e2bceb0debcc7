package storebackup

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pgbackend"
	"github.com/floe-catalog/floe/versionstore/storeexport"
	"github.com/floe-catalog/floe/versionstore/storeexport/exporttest"
)

var cluster *pgtest.Cluster

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &cluster)) }

// TestMoveToPostgres is the operator's move off the embedded store. An
// export of a quiet Pebble store, imported into an empty PostgreSQL
// database, holds every object, reference, reference-log entry and record
// the source holds; an export taken while the store is written holds
// every commit acknowledged before it began. Both serve every reference's
// tree, and a second import into a used database is refused.
func TestMoveToPostgres(t *testing.T) {
	c := pgtest.Need(t, cluster)
	ctx := t.Context()
	src := open(t) // populated
	importPG := func(name, file string) *pgbackend.Backend {
		t.Helper()
		dsn, err := c.Schema(ctx, pgtest.SchemaName(t.TempDir()+"/"+name)) // unique per run, -count included
		if err != nil {
			t.Fatal(err)
		}
		dst, err := pgbackend.Open(ctx, dsn, pgbackend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { dst.Close() })
		if st, err := ImportInto(ctx, file, dst); err != nil || st.Objects == 0 || st.Refs == 0 {
			t.Fatalf("import into PostgreSQL: %+v, %v", st, err)
		}
		return dst
	}
	serve := func(be *pgbackend.Backend) *versionstore.Store {
		t.Helper()
		s, err := versionstore.Open(ctx, be, versionstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		exporttest.ReadEveryRef(t, s)
		return s
	}

	quiet := filepath.Join(t.TempDir(), "quiet.export")
	if _, err := src.svc.Export(ctx, quiet, storeexport.ExportOptions{Gzip: true}); err != nil {
		t.Fatal(err)
	}
	dst := importPG("quiet", quiet)
	if err := storeexport.Compare(ctx, src.be, dst); err != nil {
		t.Fatalf("PostgreSQL store against the Pebble one: %v", err)
	}
	serve(dst)
	if _, err := ImportInto(ctx, quiet, dst); err == nil {
		t.Fatal("a second import into the same database was accepted")
	}

	load := exporttest.StartLoad(t, src.store, "load/a", "load/b")
	waitFor(t, load, 20)
	busy := filepath.Join(t.TempDir(), "busy.export")
	before := load.Acked()
	if _, err := src.svc.Export(ctx, busy, storeexport.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	load.Stop(t)
	exporttest.CheckAcked(t, serve(importPG("busy", busy)), before)
}
