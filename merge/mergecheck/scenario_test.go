package mergecheck_test

// The scenario files in testdata/ state the checks as stories over real
// Iceberg tables: iceberg-go writes them through a real floe server (on
// catalog branches lake@BRANCH, Pebble in a temporary directory), the
// merge engine builds candidates as the merge queue does (the source
// merged onto a branch at the target's head), and the validator reads
// what the store holds. testdata/README.md describes the language; the
// commands that make and write tables (table, branch, append, overwrite,
// alter, drop) are conformance/testkit/lakescenario's, shared with the classify and
// mergeengine scenarios.
//
// Rewrite the expected outputs after a deliberate change of behavior with
//
//	go test -run TestScenarios ./merge/mergecheck/ -rewrite

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/cockroachdb/datadriven"

	"github.com/floe-catalog/floe/conformance/testkit/lakescenario"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/mergecheck"
	"github.com/floe-catalog/floe/merge/mergeengine"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
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

// policyEngine adapts the real engine to the validator, as the
// composition root will.
type policyEngine struct{ e *policy.Engine }

func (p policyEngine) CheckMerge(ctx context.Context, summary []byte) (mergecheck.PolicyDecision, error) {
	d, err := p.e.CheckMerge(ctx, summary)
	return mergecheck.PolicyDecision(d), err
}

type scenario struct {
	srv       *testserver.Server
	wh        *icebergtable.Warehouse
	lake      *lakescenario.Lake
	engine    *mergeengine.Engine
	validator *mergecheck.Validator
	cands     map[string]mergecheck.Candidate
	hooks     *hookServer
	built     int // candidates built
}

func newScenario(t *testing.T) *scenario {
	srv := testserver.Start(t, testserver.Options{})
	wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: srv.Warehouse})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := mergeengine.New(mergeengine.Options{Store: srv.Store, Warehouses: []*icebergtable.Warehouse{wh}})
	if err != nil {
		t.Fatal(err)
	}
	pe, err := policy.New(t.Context(), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pe.Close() })
	hooks := startHookServer(t)
	v, err := mergecheck.New(mergecheck.Options{
		Store: srv.Store, Warehouses: []*icebergtable.Warehouse{wh}, Warehouse: "lake", CatalogURI: srv.URL,
		Policy: policyEngine{pe}, External: hooks.checks(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return &scenario{srv: srv, wh: wh, lake: lakescenario.New(srv), engine: eng, validator: v,
		cands: map[string]mergecheck.Candidate{}, hooks: hooks}
}

func (d *scenario) run(t *testing.T, td *datadriven.TestData) string {
	switch td.Cmd {
	case "table":
		// [on=BRANCH] [properties=(k=v,...)]
		d.lake.CreateTable(t, td, lakescenario.Properties(lakescenario.OptArg(td, "properties", ""), "="))
	case "branch":
		d.lake.Branch(t, td)
	case "append":
		d.appendRows(t, td)
	case "overwrite":
		d.lake.Overwrite(t, td, d.lake.Load(t, td), nil)
	case "alter":
		d.lake.Alter(t, td)
	case "republish":
		d.republish(t, td)
	case "drop":
		d.lake.Drop(t, td)
	case "merge":
		return d.merge(t, td)
	case "candidate":
		return d.candidate(t, td)
	case "summary":
		return d.summary(t, td)
	case "validate":
		return d.validate(t, td)
	case "deliveries":
		d.hooks.mu.Lock()
		defer d.hooks.mu.Unlock()
		return fmt.Sprintf("%d\n", len(d.hooks.seen[lakescenario.Arg(t, td, "check")]))
	case "result":
		return d.result(t, td)
	default:
		td.Fatalf(t, "unknown command %q", td.Cmd)
	}
	return ""
}

// append on=BRANCH table=T day=D rows=N [nulls=K] [copies=BRANCH] [opkind=KIND]:
// opkind sets the snapshot's floe.operation.kind;
// copies names the table's head snapshot on BRANCH in the snapshot's
// floe.merge.source-snapshot-id, as a cherry-picked copy of it would.
func (d *scenario) appendRows(t *testing.T, td *datadriven.TestData) {
	tbl := d.lake.Load(t, td)
	snapProps := iceberg.Properties{}
	if kind := lakescenario.OptArg(td, "opkind", ""); kind != "" {
		snapProps["floe.operation.kind"] = kind
	}
	if from := lakescenario.OptArg(td, "copies", ""); from != "" {
		src, err := d.lake.Catalog(t, from).LoadTable(t.Context(), tbl.Identifier())
		if err != nil {
			t.Fatal(err)
		}
		snapProps["floe.merge.source-snapshot-id"] = strconv.FormatInt(src.CurrentSnapshot().SnapshotID, 10)
	}
	d.lake.Append(t, td, tbl, snapProps)
}

// republish on=BRANCH table=T: adds the table's live data files again
// (iceberg-go's add-files, duplicates not refused), the way a pipeline
// re-registering its output would.
func (d *scenario) republish(t *testing.T, td *datadriven.TestData) {
	ctx := t.Context()
	tbl := d.lake.Load(t, td)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, task := range tasks {
		paths = append(paths, task.File.FilePath())
	}
	tx := tbl.NewTransaction()
	if err := tx.AddFiles(ctx, paths, nil, true); err != nil {
		td.Fatalf(t, "republish: %v", err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		td.Fatalf(t, "republish: %v", err)
	}
}

func (d *scenario) head(t *testing.T, ref string) versionstore.Hash {
	r, err := d.srv.Store.GetRef(ref)
	if err != nil {
		t.Fatal(err)
	}
	return r.Head
}

// merge source=BRANCH target=BRANCH: lands the merge (the merge engine's
// cherry-picks where both changed a table).
func (d *scenario) merge(t *testing.T, td *datadriven.TestData) string {
	src, tgt := lakescenario.Arg(t, td, "source"), lakescenario.Arg(t, td, "target")
	_, err := d.engine.Merge(t.Context(), versionstore.MergeRequest{
		Target: tgt, ExpectedTarget: d.head(t, tgt), From: d.head(t, src), FromRef: src,
		DefaultMode: versionstore.MergeNormal, Committer: "test", Meta: versionstore.CommitMeta{Message: "merge " + src}})
	if err != nil {
		return "error: " + mask(err.Error()) + "\n"
	}
	return ""
}

// candidate [name=C] source=BRANCH target=BRANCH [direct] [principal=P]
// [checks=A,B] [allow-structural]: a candidate as the queue builds it, the
// source merged onto a new branch at the target's head; direct takes the
// source's head itself as the candidate (what a queue must not publish
// when it does not descend from the target's head).
func (d *scenario) candidate(t *testing.T, td *datadriven.TestData) string {
	src, tgt := lakescenario.Arg(t, td, "source"), lakescenario.Arg(t, td, "target")
	c := mergecheck.Candidate{
		RequestID: "req-" + lakescenario.OptArg(td, "name", "c"), Target: tgt, TargetHead: d.head(t, tgt), SourceRef: src,
		SourceHash: d.head(t, src), Principal: lakescenario.OptArg(td, "principal", "pipeline"), AllowStructural: td.HasArg("allow-structural"),
	}
	if checks := lakescenario.OptArg(td, "checks", ""); checks != "" {
		c.RequiredChecks = strings.Split(checks, ",")
	}
	if td.HasArg("direct") {
		c.Commit = c.SourceHash
	} else {
		d.built++
		name := fmt.Sprintf("queue/candidate-%d", d.built)
		if _, err := d.srv.Store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: name, Type: versionstore.Branch, Target: c.TargetHead}); err != nil {
			t.Fatal(err)
		}
		res, err := d.engine.Merge(t.Context(), versionstore.MergeRequest{
			Target: name, ExpectedTarget: c.TargetHead, From: c.SourceHash, FromRef: src,
			DefaultMode: versionstore.MergeNormal, Committer: "queue", Meta: versionstore.CommitMeta{Message: "candidate"}})
		if err != nil {
			return "error: " + mask(err.Error()) + "\n"
		}
		c.Commit = res.ResultantHash
	}
	d.cands[lakescenario.OptArg(td, "name", "c")] = c
	return ""
}

var longNumber = regexp.MustCompile(`[0-9a-f]{12,}|[0-9]{6,}`)

var filePath = regexp.MustCompile(`file://[^ ]+`)

func mask(s string) string {
	return longNumber.ReplaceAllString(filePath.ReplaceAllString(s, "<path>"), "<id>")
}

// summary [name=C]: the candidate's merge summary, without ids.
func (d *scenario) summary(t *testing.T, td *datadriven.TestData) string {
	s, err := d.validator.Summary(t.Context(), d.cands[lakescenario.OptArg(td, "name", "c")])
	if err != nil {
		return "error: " + mask(err.Error()) + "\n"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "source %s, target %s, principal %s, warehouse %s\n", s.Source.Ref, s.Target.Ref, s.Principal, mask(s.Warehouse))
	tt := s.Totals
	fmt.Fprintf(&b, "totals: %d table(s), %d snapshot(s), %d partition(s), data files +%d -%d, delete files +%d -%d, records +%d -%d\n",
		tt.Tables, tt.Snapshots, tt.Partitions, tt.AddedDataFiles, tt.RemovedDataFiles, tt.AddedDeleteFiles, tt.RemovedDeleteFiles, tt.AddedRecords, tt.RemovedRecords)
	for _, tb := range s.Tables {
		var ops []string
		for _, sn := range tb.Snapshots {
			ops = append(ops, sn.Operation)
		}
		fmt.Fprintf(&b, "table %s %s: snapshots [%s]\n", tb.Name, tb.Change, strings.Join(ops, " "))
		for _, p := range tb.Partitions {
			fmt.Fprintf(&b, "  %s: data +%d (%d records) -%d (%d records); records %d -> %d\n", p.Path,
				p.AddedDataFiles, p.AddedRecords, p.RemovedDataFiles, p.RemovedRecords, p.RecordsBefore, p.RecordsAfter)
		}
		for _, c := range tb.SchemaChanges {
			fmt.Fprintf(&b, "  schema: %s\n", c)
		}
		for _, c := range tb.SpecChanges {
			fmt.Fprintf(&b, "  spec: %s\n", c)
		}
		for _, c := range tb.SortOrderChanges {
			fmt.Fprintf(&b, "  sort order: %s\n", c)
		}
		for _, c := range tb.OtherStructuralChanges {
			fmt.Fprintf(&b, "  other: %s\n", c)
		}
	}
	for _, o := range s.OtherChanges {
		fmt.Fprintf(&b, "%s %s %s\n", o.Type, o.Name, o.Change)
	}
	return b.String()
}

// validate [name=C] [only=CHECK,...]: the checks' results (or only some).
func (d *scenario) validate(t *testing.T, td *datadriven.TestData) string {
	c := d.cands[lakescenario.OptArg(td, "name", "c")]
	res, err := d.validator.Validate(t.Context(), c)
	if err != nil {
		return "error: " + mask(err.Error()) + "\n"
	}
	only := lakescenario.OptArg(td, "only", "")
	var b strings.Builder
	for _, r := range res {
		if only != "" && !strings.Contains(","+only+",", ","+r.Name+",") {
			continue
		}
		verdict := "pass"
		if !r.Passed {
			verdict = "FAIL"
		}
		fmt.Fprintf(&b, "%s: %s: %s\n", r.Name, verdict, mask(r.Reason))
	}
	return b.String()
}

// result [name=C]: the result kept for the candidate, read back by a new
// validator over the same store (so from its store record).
func (d *scenario) result(t *testing.T, td *datadriven.TestData) string {
	v, err := mergecheck.New(mergecheck.Options{Store: d.srv.Store, Warehouses: []*icebergtable.Warehouse{d.wh}})
	if err != nil {
		t.Fatal(err)
	}
	c := d.cands[lakescenario.OptArg(td, "name", "c")]
	r, err := v.Result(t.Context(), c.Commit)
	if err != nil {
		return "error: " + mask(err.Error()) + "\n"
	}
	var names []string
	for _, ch := range r.Checks {
		v := "pass"
		if !ch.Passed {
			v = "FAIL"
		}
		names = append(names, ch.Name+"="+v)
	}
	return fmt.Sprintf("candidate %v, request %s, passed %v: %s\n", r.Candidate.Commit == c.Commit, r.Candidate.RequestID, r.Passed, strings.Join(names, " "))
}
