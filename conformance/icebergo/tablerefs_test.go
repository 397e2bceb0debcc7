package icebergo

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/versionstore"
)

// post sends a JSON body to floe and fails the test unless it answers
// want.
func (f *floeServer) post(t *testing.T, path string, body any, want int) []byte {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+f.addr+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("POST %s: %d %s, want %d", path, resp.StatusCode, data, want)
	}
	return data
}

// refRetention is a table-level ref's retention as Iceberg stores it.
type refRetention struct{ maxRefAge, maxSnapshotAge, minSnapshots int64 }

func retentionOf(t *testing.T, meta table.Metadata, name string) (refRetention, bool) {
	t.Helper()
	for n, ref := range meta.Refs() {
		if n != name {
			continue
		}
		var r refRetention
		if ref.MaxRefAgeMs != nil {
			r.maxRefAge = *ref.MaxRefAgeMs
		}
		if ref.MaxSnapshotAgeMs != nil {
			r.maxSnapshotAge = *ref.MaxSnapshotAgeMs
		}
		if ref.MinSnapshotsToKeep != nil {
			r.minSnapshots = int64(*ref.MinSnapshotsToKeep)
		}
		return r, true
	}
	return refRetention{}, false
}

// TestTableRefRetention: the retention of Iceberg's table-level refs
// (max-ref-age-ms, max-snapshot-age-ms, min-snapshots-to-keep in the
// metadata's refs) is Iceberg's own. floe keeps it as set by plain REST
// set-snapshot-ref updates, through appends by iceberg-go and through a
// catalog merge that cherry-picks the source's snapshots onto main.
func TestTableRefRetention(t *testing.T) {
	t.Parallel()
	f := startFloe(t)
	ctx := t.Context()
	cat := f.catalog(t, "lake")
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: iceberg.IdentityTransform{}})
	ident := catalog.ToIdentifier("ns", "events")
	tbl := createTable(t, cat, ident, catalog.WithPartitionSpec(&spec))
	tbl = appendRows(t, tbl, []row{{1, "eu", 1}})
	first := tbl.Metadata().CurrentSnapshot().SnapshotID

	want := map[string]refRetention{
		"main":  {maxSnapshotAge: 86_400_000, minSnapshots: 5},
		"audit": {maxRefAge: 3_600_000},
		"b1":    {maxRefAge: 7_200_000, maxSnapshotAge: 600_000, minSnapshots: 2},
	}
	f.post(t, "/v1/lake/namespaces/ns/tables/events", map[string]any{
		"requirements": []any{},
		"updates": []any{
			map[string]any{"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": first,
				"max-snapshot-age-ms": 86_400_000, "min-snapshots-to-keep": 5},
			map[string]any{"action": "set-snapshot-ref", "ref-name": "audit", "type": "tag", "snapshot-id": first,
				"max-ref-age-ms": 3_600_000},
			map[string]any{"action": "set-snapshot-ref", "ref-name": "b1", "type": "branch", "snapshot-id": first,
				"max-ref-age-ms": 7_200_000, "max-snapshot-age-ms": 600_000, "min-snapshots-to-keep": 2},
		},
	}, http.StatusOK)
	check := func(step, warehouse string) *table.Table {
		t.Helper()
		loaded, err := f.catalog(t, warehouse).LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		for name, w := range want {
			if got, ok := retentionOf(t, loaded.Metadata(), name); !ok || got != w {
				t.Errorf("%s: table ref %s on %s has retention %+v (present %v), want %+v", step, name, warehouse, got, ok, w)
			}
		}
		return loaded
	}
	// Writers load the table again: iceberg-go, like Iceberg's Java
	// client, sends a ref's retention from the metadata it holds with
	// every move of the ref.
	tbl = check("after set-snapshot-ref", "lake")

	// A catalog branch, appends on both sides in different partitions,
	// and a merge that cherry-picks dev's snapshot onto main's head.
	head, err := f.store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.CreateRef(ctx, versionstore.CreateRefRequest{Name: "dev", Type: versionstore.Branch, Target: head.Head}); err != nil {
		t.Fatal(err)
	}
	devTbl, err := f.catalog(t, "lake@dev").LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	appendRows(t, devTbl, []row{{3, "us", 3}})
	appendRows(t, tbl, []row{{2, "eu", 2}})
	check("after an append on main", "lake")
	check("after an append on dev", "lake@dev")

	dev, err := f.store.GetRef("dev")
	if err != nil {
		t.Fatal(err)
	}
	main, err := f.store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	f.post(t, "/api/v2/trees/"+url.PathEscape("main@"+main.Head.String())+"/history/merge",
		map[string]any{"fromRefName": "dev", "fromHash": dev.Head.String()}, http.StatusOK)
	merged := check("after the merge", "lake")
	if s := merged.Metadata().CurrentSnapshot(); s == nil || s.Summary == nil || s.Summary.Properties["floe.merge.source-ref"] == "" {
		t.Fatalf("main's table head after the merge is not a cherry-pick: %+v", s)
	}
	rowsEqual(t, scanRows(t, merged, ""), []row{{1, "eu", 1}, {2, "eu", 2}, {3, "us", 3}})
}
