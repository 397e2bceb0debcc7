package mergeengine_test

// The scenario files in testdata/ state what a merge does with Iceberg
// tables changed on both sides, as stories over real tables: iceberg-go
// writes them through a real floe server on catalog branches
// (lake@BRANCH), merges go through the Nessie API v2, and iceberg-go's
// scanner reads the rows back. testdata/README.md describes the language;
// the commands that make and write tables (table, branch, append, delete,
// overwrite, alter, and compact's new file) are conformance/testkit/lakescenario's,
// shared with the classify and mergecheck scenarios.
//
// Rewrite the expected outputs after a deliberate change of behavior with
//
//	go test -run TestScenarios ./merge/mergeengine/ -rewrite

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/cockroachdb/datadriven"

	"github.com/floe-catalog/floe/conformance/testkit/lakescenario"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/rest/nessie"
)

func TestScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
		if strings.HasSuffix(path, ".md") {
			return
		}
		d := newScenario(t)
		datadriven.RunTest(t, path, d.run)
	})
}

type scenario struct {
	srv    *testserver.Server
	lake   *lakescenario.Lake
	policy *denyPolicy
}

// denyPolicy refuses a Nessie merge that writes a table its deny set
// names ("merge NS.NAME"); everything else is allowed.
type denyPolicy struct {
	mu   sync.Mutex
	deny map[string]bool
}

func (p *denyPolicy) Decide(_ context.Context, in policy.Input) (policy.Decision, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range in.Contents {
		if n := string(in.Action) + " " + strings.Join(c.Key, "."); p.deny[n] {
			return policy.Decision{ID: "d", Reasons: []string{n + " refused"}}, nil
		}
	}
	return policy.Decision{ID: "d", Allow: true}, nil
}

func newScenario(t *testing.T) *scenario {
	p := &denyPolicy{deny: map[string]bool{}}
	who := func(*http.Request) policy.Principal { return policy.Principal{ID: "etl"} }
	srv := testserver.Start(t, testserver.Options{Nessie: func(d *nessie.Deps) {
		d.Guard = authz.NewGuard(p, "nessie", who, nil)
	}})
	return &scenario{srv: srv, lake: lakescenario.New(srv), policy: p}
}

func (d *scenario) run(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "table":
		// properties=(k:v,...)
		d.lake.CreateTable(t, td, lakescenario.Properties(lakescenario.OptArg(td, "properties", ""), ":"))
	case "branch":
		d.lake.Branch(t, td)
	case "append":
		d.lake.Append(t, td, d.lake.Load(t, td), nil)
	case "alter":
		d.lake.Alter(t, td)
	case "delete":
		d.delete(t, td)
	case "rewrite":
		d.lake.Rewrite(t, td, d.lake.Load(t, td))
	case "overwrite":
		d.overwrite(t, td)
	case "compact":
		d.compact(t, td)
	case "ref":
		d.ref(t, td)
	case "metadata":
		return d.metadata(t, td)
	case "deny":
		d.policy.mu.Lock()
		d.policy.deny[td.CmdArgs[0].Key+" "+td.CmdArgs[1].Key] = true
		d.policy.mu.Unlock()
	case "merge":
		return d.merge(t, td)
	case "force-plan":
		return d.forcePlan(t, td)
	case "transplant":
		return d.transplant(t, td)
	case "rows":
		return d.scanRows(t, td)
	case "column":
		return d.column(t, td)
	case "snapshots":
		return d.snapshots(t, td)
	case "files":
		return d.files(t, td)
	case "head":
		return d.head(t, td)
	default:
		td.Fatalf(t, "unknown command %q", td.Cmd)
	}
	return ""
}

// record=pinned|unpinned|self on an overwrite or a delete of a day: the
// operation record (floe.operation.*, OPERATIONS.md) the writer sets in
// the snapshot summary, as a pipeline would: the day's partition, and the
// inputs it read: none (pinned), not said (unpinned), or the table itself
// at the snapshot it read (self).
func (d *scenario) record(t *testing.T, td *datadriven.TestData, tbl *table.Table, kind string) iceberg.Properties {
	how := lakescenario.OptArg(td, "record", "")
	if how == "" {
		return nil
	}
	props := iceberg.Properties{
		classify.OpKind:       kind,
		classify.OpPartitions: "day=" + lakescenario.Arg(t, td, "day"),
	}
	switch how {
	case "pinned":
		props[classify.OpSourceSnapshotIDs] = "none"
	case "self":
		props[classify.OpSourceSnapshotIDs] = fmt.Sprintf("%s@%d", lakescenario.Arg(t, td, "table"), tbl.CurrentSnapshot().SnapshotID)
	case "unpinned":
	default:
		td.Fatalf(t, "record=%s: pinned, unpinned or self", how)
	}
	return props
}

// delete on=BRANCH table=T (day=D [record=...] | id=N): a copy-on-write
// delete of a whole day, or of one row (its file is rewritten).
func (d *scenario) delete(t *testing.T, td *datadriven.TestData) {
	tbl := d.lake.Load(t, td)
	var props iceberg.Properties
	if lakescenario.OptArg(td, "id", "") == "" {
		props = d.record(t, td, tbl, classify.OpKindDeletePartitions)
	}
	d.lake.Delete(t, td, tbl, props)
}

// overwrite on=BRANCH table=T day=D rows=N [record=...]: replaces day
// D's rows with N new ones.
func (d *scenario) overwrite(t *testing.T, td *datadriven.TestData) {
	tbl := d.lake.Load(t, td)
	d.lake.Overwrite(t, td, tbl, d.record(t, td, tbl, classify.OpKindOverwritePartitions))
}

// compact on=BRANCH table=T day=D: rewrites day D's data files into one,
// as a compaction job does: a rewrite (iceberg-go's RewriteFiles, like
// Spark's rewrite_data_files) that Iceberg records as "replace". The new
// file is written by appending the day's rows to a scratch table of the
// same spec first.
func (d *scenario) compact(t *testing.T, td *datadriven.TestData) {
	ctx := t.Context()
	tbl := d.lake.Load(t, td)
	spec := tbl.Spec()
	old, file := d.lake.Compaction(t, td, tbl, catalog.WithPartitionSpec(&spec))
	tx := tbl.NewTransaction()
	rw := tx.NewRewrite(nil)
	for _, f := range old {
		rw.DeleteFile(f)
	}
	if err := rw.AddDataFile(file).Commit(ctx); err != nil {
		td.Fatalf(t, "compact: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		td.Fatalf(t, "compact: %v", err)
	}
}
