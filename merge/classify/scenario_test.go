package classify_test

// The scenario files in testdata/ state the classification rules as
// stories over real Iceberg tables: iceberg-go writes them through a real
// floe server (on catalog branches lake@BRANCH), and the classifier reads
// what the version store holds at the merge base and both heads.
// testdata/README.md describes the language; the commands that make
// and write tables (table, branch, append, delete, alter, drop, and
// compact's new file) are conformance/testkit/lakescenario's, shared with the
// mergeengine and mergecheck scenarios.
//
// Rewrite the expected outputs after a deliberate change of behavior with
//
//	go test -run TestScenarios ./merge/classify/ -rewrite

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/cockroachdb/datadriven"

	"github.com/floe-catalog/floe/conformance/testkit/lakescenario"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/classify"
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

type scenario struct {
	srv      *testserver.Server
	lake     *lakescenario.Lake
	classify *classify.Classifier
}

func newScenario(t *testing.T) *scenario {
	srv := testserver.Start(t, testserver.Options{})
	wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: srv.Warehouse})
	if err != nil {
		t.Fatal(err)
	}
	return &scenario{srv: srv, lake: lakescenario.New(srv), classify: classify.New(wh)}
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
	case "delete":
		d.lake.Delete(t, td, d.lake.Load(t, td), nil)
	case "overwrite":
		d.overwrite(t, td)
	case "compact":
		d.compact(t, td)
	case "alter":
		d.lake.Alter(t, td)
	case "rollback":
		d.rollback(t, td)
	case "drop":
		d.lake.Drop(t, td)
	case "classify":
		return d.classifyTable(t, td)
	default:
		td.Fatalf(t, "unknown command %q", td.Cmd)
	}
	return ""
}

// overwrite on=BRANCH table=T day=D rows=N [recorded]: replaces day D's
// rows with N new ones; recorded sets the operation record
// (overwrite-partitions of the day, no inputs).
func (d *scenario) overwrite(t *testing.T, td *datadriven.TestData) {
	var record iceberg.Properties
	if td.HasArg("recorded") {
		// The operation record a pipeline sets (merge/mergeengine/OPERATIONS.md).
		record = iceberg.Properties{
			classify.OpKind: classify.OpKindOverwritePartitions, classify.OpPartitions: "day=" + lakescenario.Arg(t, td, "day"),
			classify.OpSourceSnapshotIDs: "none",
		}
	}
	d.lake.Overwrite(t, td, d.lake.Load(t, td), record)
}

// compact on=BRANCH table=T day=D: rewrites day D's data files into one,
// as a compaction job does (iceberg-go records it as an "overwrite"). The new file is
// written by appending the day's rows to a scratch table first.
func (d *scenario) compact(t *testing.T, td *datadriven.TestData) {
	tbl := d.lake.Load(t, td)
	files, file := d.lake.Compaction(t, td, tbl)
	var old []string
	for _, f := range files {
		old = append(old, f.FilePath())
	}
	tx := tbl.NewTransaction()
	if err := tx.ReplaceDataFiles(t.Context(), old, []string{file.FilePath()}, nil); err != nil {
		td.Fatalf(t, "compact: %v", err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		td.Fatalf(t, "compact: %v", err)
	}
}

// rollback on=BRANCH table=T: the table's main ref back to its first
// snapshot.
func (d *scenario) rollback(t *testing.T, td *datadriven.TestData) {
	tbl := d.lake.Load(t, td)
	snaps := tbl.Metadata().Snapshots()
	tx := tbl.NewTransaction()
	if err := tx.RollbackToSnapshot(snaps[0].SnapshotID); err != nil {
		td.Fatalf(t, "rollback: %v", err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		td.Fatalf(t, "rollback: %v", err)
	}
}

// classify source=BRANCH target=BRANCH table=T: the classification of T
// for a merge of source into target, from the store's values at the
// merge base and both heads.
func (d *scenario) classifyTable(t *testing.T, td *datadriven.TestData) string {
	ctx := t.Context()
	st := d.srv.Store
	src, err := st.GetRef(lakescenario.Arg(t, td, "source"))
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := st.GetRef(lakescenario.Arg(t, td, "target"))
	if err != nil {
		t.Fatal(err)
	}
	base, err := st.MergeBase(ctx, src.Head, tgt.Head)
	if err != nil {
		t.Fatal(err)
	}
	key := versionstore.ContentKey(strings.Split(lakescenario.Arg(t, td, "table"), "."))
	at := func(h versionstore.Hash) *versionstore.Content {
		c, err := st.GetContent(ctx, h, key)
		if errors.Is(err, versionstore.ErrContentNotFound) {
			return nil
		}
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	res, err := d.classify.Classify(ctx, at(base), at(src.Head), at(tgt.Head))
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return render(res)
}

var longNumber = regexp.MustCompile(`[0-9]{6,}`)

// render writes the parts of a classification that do not depend on
// random ids and file names.
func render(r *classify.Table) string {
	var b strings.Builder
	fmt.Fprintf(&b, "class: %s\nreason: %s\n", r.Class, longNumber.ReplaceAllString(r.Reason, "<id>"))
	side := func(name string, s classify.Side) {
		if !s.Changed {
			fmt.Fprintf(&b, "%s: unchanged\n", name)
			return
		}
		var ops []string
		for _, sn := range s.Snapshots {
			ops = append(ops, sn.Operation)
		}
		var parts []string
		for _, p := range s.Partitions {
			parts = append(parts, p.String())
		}
		fmt.Fprintf(&b, "%s: snapshots [%s]; partitions [%s]\n", name, strings.Join(ops, " "), strings.Join(parts, " "))
		fmt.Fprintf(&b, "  data files +%d (%d records) -%d (%d records); delete files +%d -%d\n",
			s.DataFiles.AddedCount, s.DataFiles.AddedRecords, s.DataFiles.RemovedCount, s.DataFiles.RemovedRecords,
			s.DeleteFiles.AddedCount, s.DeleteFiles.RemovedCount)
		for _, c := range s.StructuralChanges {
			fmt.Fprintf(&b, "  structural: %s\n", c)
		}
		for i, sn := range s.Snapshots {
			if o := sn.FloeOperation; o != nil {
				var touched []string
				for _, p := range sn.Partitions {
					touched = append(touched, p.String())
				}
				fmt.Fprintf(&b, "  snapshot %d (%s) records %s of [%s], pinned %v with %d input(s), replayable %v; it touched [%s]\n",
					i+1, sn.Operation, o.Kind, strings.Join(o.Partitions, " "), o.Pinned, len(o.Sources), o.Replayable(), strings.Join(touched, " "))
			}
		}
	}
	side("source", r.Source)
	side("target", r.Target)
	if len(r.CommonPartitions) > 0 {
		var parts []string
		for _, p := range r.CommonPartitions {
			parts = append(parts, p.String())
		}
		fmt.Fprintf(&b, "common partitions: [%s]\n", strings.Join(parts, " "))
	}
	if len(r.ConflictingFiles) > 0 {
		fmt.Fprintf(&b, "conflicting files: %d\n", len(r.ConflictingFiles))
	}
	return b.String()
}
