package icebergo

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/versionstore"
)

// TestSharedFilesAcrossBranches: tables carry gc.enabled=false, so
// iceberg-go refuses to expire snapshots on a catalog branch; turning GC
// on is refused by floe; purging the table on the branch deletes nothing
// main reads.
func TestSharedFilesAcrossBranches(t *testing.T) {
	t.Parallel()
	f := startFloe(t)
	ctx := t.Context()
	mainCat := f.catalog(t, "lake")
	if err := mainCat.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	ident := catalog.ToIdentifier("ns", "shared")
	tbl := createTable(t, mainCat, ident)
	for k, want := range map[string]string{"gc.enabled": "false", "write.metadata.delete-after-commit.enabled": "false"} {
		if got := tbl.Properties()[k]; got != want {
			t.Fatalf("created table has %s=%q, want %q", k, got, want)
		}
	}
	tbl = appendRows(t, tbl, []row{{1, "eu", 1}})
	appendRows(t, tbl, []row{{2, "us", 2}})

	head, err := f.store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.CreateRef(ctx, versionstore.CreateRefRequest{Name: "dev", Type: versionstore.Branch, Target: head.Head}); err != nil {
		t.Fatal(err)
	}
	devCat := f.catalog(t, "lake@dev")
	devTbl, err := devCat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	devTbl = appendRows(t, devTbl, []row{{3, "apac", 3}})

	// iceberg-go's own check, as Java's: no snapshot expiry.
	tx := devTbl.NewTransaction()
	err = tx.ExpireSnapshots(table.WithRetainLast(1), table.WithOlderThan(0))
	if err == nil || !strings.Contains(err.Error(), "GC is disabled (deleting files may corrupt other tables)") {
		t.Fatalf("expire snapshots on dev: %v, want iceberg-go's GC is disabled refusal", err)
	}

	// floe's refusal of turning GC on.
	tx = devTbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"gc.enabled": "true"}); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Commit(ctx)
	if !errors.Is(err, rest.ErrBadRequest) || !strings.Contains(err.Error(), "may corrupt other branches' tables") ||
		!strings.Contains(err.Error(), "floe gc") {
		t.Fatalf("set gc.enabled=true on dev: %v, want 400 naming floe gc", err)
	}

	// Purging on dev deletes no file: main reads every row.
	if err := devCat.PurgeTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	mainTbl, err := mainCat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	rowsEqual(t, scanRows(t, mainTbl, ""), []row{{1, "eu", 1}, {2, "us", 2}})
	if mainTbl.Properties()["gc.enabled"] != "false" {
		t.Fatalf("main's table properties %v", mainTbl.Properties())
	}
}
