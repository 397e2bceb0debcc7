package floeapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/rest/floeapi"
	"github.com/floe-catalog/floe/versionstore"
)

// planLake is a real floe with table ns.t on main and branch dev, written
// by iceberg-go.
type planLake struct {
	t   *testing.T
	srv *testserver.Server
}

func newPlanLake(t *testing.T) *planLake {
	l := &planLake{t: t, srv: testserver.Start(t, testserver.Options{})}
	cat := l.catalog("lake")
	if err := cat.CreateNamespace(t.Context(), catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	sch := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	if _, err := cat.CreateTable(t.Context(), catalog.ToIdentifier("ns", "t"), sch); err != nil {
		t.Fatal(err)
	}
	main, err := l.srv.Store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.srv.Store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: "dev", Type: versionstore.Branch, Target: main.Head}); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *planLake) catalog(wh string) *rest.Catalog {
	c, err := rest.NewCatalog(l.t.Context(), "floe", l.srv.URL, rest.WithWarehouseLocation(wh))
	if err != nil {
		l.t.Fatal(err)
	}
	return c
}

func (l *planLake) appendRow(wh string, id int64) {
	l.t.Helper()
	tbl, err := l.catalog(wh).LoadTable(l.t.Context(), catalog.ToIdentifier("ns", "t"))
	if err != nil {
		l.t.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		l.t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(id)
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	if _, err := tbl.AppendTable(l.t.Context(), at, 1024, nil); err != nil {
		l.t.Fatal(err)
	}
}

func (l *planLake) plan(body string) (int, []byte) {
	l.t.Helper()
	resp, err := http.Post(l.srv.URL+floeapi.Prefix+"/merge-plans", "application/json", bytes.NewBufferString(body))
	if err != nil {
		l.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		l.t.Fatal(err)
	}
	return resp.StatusCode, data
}

func (l *planLake) fileCount() int {
	n := 0
	_ = filepath.WalkDir(l.srv.WarehouseDir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// TestMergePlan: floe's API plans a merge through the merge engine and
// says what it would do with each table changed on both sides, with its
// classification, writing nothing; bad requests are 400 and 404.
func TestMergePlan(t *testing.T) {
	l := newPlanLake(t)
	l.appendRow("lake", 1)
	l.appendRow("lake@dev", 2)
	head, _ := l.srv.Store.GetRef(versionstore.DefaultBranch)
	files := l.fileCount()

	status, data := l.plan(`{"source":"dev","target":"main"}`)
	var plan floeapi.MergePlan
	if err := json.Unmarshal(data, &plan); err != nil || status != http.StatusOK {
		t.Fatalf("plan: %d %s (%v)", status, data, err)
	}
	if !plan.Mergeable || plan.Target.Hash != head.Head.String() || plan.Source.Name != "dev" || plan.MergeBase == "" {
		t.Fatalf("plan %+v", plan)
	}
	if len(plan.Tables) != 1 || plan.Tables[0].Action != "cherry-pick" || plan.Tables[0].Snapshots != 1 ||
		plan.Tables[0].Classification == nil || plan.Tables[0].Classification.Source.Snapshots == nil {
		t.Fatalf("tables %s", data)
	}
	if after, _ := l.srv.Store.GetRef(versionstore.DefaultBranch); after.Head != head.Head {
		t.Fatal("a merge plan moved main")
	}
	if n := l.fileCount(); n != files {
		t.Fatalf("a merge plan left %d files in the warehouse (had %d)", n, files)
	}

	// Structural changes on both sides (a column added on each): the plan
	// says the merge is refused. (A compatible change on one side only
	// merges.)
	for wh, col := range map[string]string{"lake@dev": "note", "lake": "other"} {
		tbl, err := l.catalog(wh).LoadTable(t.Context(), catalog.ToIdentifier("ns", "t"))
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.NewTransaction()
		if err := tx.UpdateSchema(true, false).AddColumn([]string{col}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	status, data = l.plan(`{"source":"dev","target":"main"}`)
	plan = floeapi.MergePlan{}
	if err := json.Unmarshal(data, &plan); err != nil || status != http.StatusOK {
		t.Fatalf("plan: %d %s (%v)", status, data, err)
	}
	if plan.Mergeable || len(plan.Tables) != 1 || plan.Tables[0].Action != "refuse" || plan.Tables[0].Classification.Class != "structural" ||
		!strings.Contains(plan.Tables[0].Reason, "--discard-target-changes") {
		t.Fatalf("structural plan %s", data)
	}

	// Forced, the table is taken from dev whole: the plan says what of
	// main that discards (main's append and its row, its new column).
	status, data = l.plan(`{"source":"dev","target":"main","force":[["ns","t"]]}`)
	plan = floeapi.MergePlan{}
	if err := json.Unmarshal(data, &plan); err != nil || status != http.StatusOK {
		t.Fatalf("plan: %d %s (%v)", status, data, err)
	}
	if !plan.Mergeable || len(plan.Tables) != 1 || plan.Tables[0].Action != "force" || plan.Tables[0].Discards == nil {
		t.Fatalf("forced plan %s", data)
	}
	d := plan.Tables[0].Discards
	if len(d.Snapshots) != 1 || d.Snapshots[0].Operation != "append" || d.DataFiles.AddedCount != 1 || d.DataFiles.AddedRecords != 1 ||
		len(d.StructuralChanges) == 0 || !strings.Contains(d.Summary, "1 row(s) in 1 data file(s) the target added") {
		t.Fatalf("forced plan's discards %s", data)
	}

	for body, want := range map[string]int{
		`{"source":"nope","target":"main"}`:      http.StatusNotFound,
		`{"source":"dev"}`:                       http.StatusBadRequest,
		`{"source":"dev","target":"main","x":1}`: http.StatusBadRequest,
		`{"source":"dev","target":"gone"}`:       http.StatusNotFound,
	} {
		status, data := l.plan(body)
		var eb floeapi.ErrorBody
		if status != want || json.Unmarshal(data, &eb) != nil || eb.Error.Status != want {
			t.Errorf("%s: %d %s, want %d in the error model", body, status, data, want)
		}
	}
}
