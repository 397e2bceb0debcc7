package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icetable "github.com/apache/iceberg-go/table"
)

// TestCLIMaintenanceLock: `floe maintenance lock` prints the token, a
// second job's lock exits 2 with one line naming the holder, status and
// `floe table stats` show the lease, renew and unlock need the token.
func TestCLIMaintenanceLock(t *testing.T) {
	e := newCLIEnv(t)
	ctx := t.Context()
	cat, err := rest.NewCatalog(ctx, "floe", "http://"+e.addr, rest.WithWarehouseLocation("lake"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	if err := cat.CreateNamespace(ctx, catalog.ToIdentifier("sales"), nil); err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := cat.CreateTable(ctx, catalog.ToIdentifier("sales", "orders"), schema)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := icetable.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	b.Field(0).(*array.Int64Builder).AppendValues([]int64{1, 2, 3}, nil)
	rec := b.NewRecordBatch()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	if _, err := tbl.AppendTable(ctx, at, 1024, nil); err != nil {
		t.Fatal(err)
	}
	at.Release()
	rec.Release()
	b.Release()

	if out := e.ok(t, "maintenance", "status", "sales.orders"); out != "sales.orders on branch main: not locked\n" {
		t.Errorf("status of a free lock: %q", out)
	}
	out := e.ok(t, "maintenance", "lock", "sales.orders", "--job", "nightly", "--ttl", "1h")
	m := regexp.MustCompile(`^Locked sales\.orders on branch main for job "nightly" until (\S+Z) \(lock ([0-9a-f]{32})\)\ntoken: (fml_\S+)\n$`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("lock printed %q", out)
	}
	expires, id, token := m[1], m[2], m[3]

	// Another job's lock: exit 2, one line naming holder, job and expiry.
	_, errOut, code := e.floe(t, "maintenance", "lock", "sales.orders", "--job", "other")
	want := `floe: sales.orders on branch main is locked for maintenance by anonymous (job "nightly") until ` + expires + ": skip this cycle\n"
	if code != exitLockHeld || errOut != want {
		t.Errorf("second lock: exit %d, stderr %q; want exit %d, %q", code, errOut, exitLockHeld, want)
	}

	out = e.ok(t, "maintenance", "status", "sales.orders")
	if !strings.HasPrefix(out, `sales.orders on branch main: locked by anonymous (job "nightly") since `) || !strings.Contains(out, "until "+expires+" (lock "+id+")") {
		t.Errorf("status: %q", out)
	}
	out = e.ok(t, "maintenance", "status")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "TABLE") ||
		strings.Join(strings.Fields(lines[1]), " ") != "sales.orders main anonymous nightly "+expires {
		t.Errorf("status of all locks: %q", out)
	}

	out = e.ok(t, "table", "stats", "sales.orders")
	for _, want := range []string{
		"sales.orders on branch main\n",
		"snapshots in the last 24h: 1 (of 1 the metadata lists)\n",
		"  append     1          0.042\n",
		"(append, ", ": 3 records, 1 data files, 0 delete files, ",
		`maintenance lock: locked by anonymous (job "nightly")`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table stats does not print %q:\n%s", want, out)
		}
	}

	e.fails(t, []string{"maintenance", "unlock", "sales.orders", "--token", "fml_wrong"}, "another lease's token", `(job "nightly")`, "CONFLICT")
	e.fails(t, []string{"maintenance", "unlock", "sales.orders"}, "token is required", lockTokenEnv)
	out, errOut, code = runFloe(t, []string{"FLOE_SERVER=http://" + e.addr, lockTokenEnv + "=" + token}, "maintenance", "renew", "sales.orders", "--ttl", "2h")
	if code != 0 || !strings.HasPrefix(out, `Renewed sales.orders on branch main for job "nightly" until `) {
		t.Errorf("renew: exit %d, %q %q", code, out, errOut)
	}
	if out := e.ok(t, "maintenance", "unlock", "sales.orders", "--token", token); out != "Released sales.orders on branch main (job \"nightly\")\n" {
		t.Errorf("unlock: %q", out)
	}
	e.fails(t, []string{"maintenance", "unlock", "sales.orders", "--token", token}, "not locked")
	if out := e.ok(t, "maintenance", "lock", "sales.orders", "-q"); !regexp.MustCompile(`^fml_\S+\n$`).MatchString(out) {
		t.Errorf("lock -q printed %q, want the token alone", out)
	}
	e.fails(t, []string{"table", "stats", "sales.nope"}, "no such table", "NOT_FOUND")
}
