package mergeengine_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cockroachdb/datadriven"

	"github.com/floe-catalog/floe/conformance/testkit/lakescenario"
	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/merge/tablemerge"
	"github.com/floe-catalog/floe/versionstore"
)

var (
	longNumber = regexp.MustCompile(`[0-9]{8,}`)
	hexHash    = regexp.MustCompile(`[0-9a-f]{64}`)
	fileURL    = regexp.MustCompile(`file://[^\s,;)"]+`)
)

func mask(s string) string {
	s = fileURL.ReplaceAllString(s, "<file>")
	s = hexHash.ReplaceAllString(s, "<hash>")
	return longNumber.ReplaceAllString(s, "<id>")
}

// post sends body as JSON to the Nessie API v2 at /api/v2/trees/PATH, as
// `floe merge` and `floe transplant` do, and decodes a 200 answer into
// out. Any other answer is the scenario's output line "STATUS message"
// (masked), returned with ok false.
func (d *scenario) post(t *testing.T, path string, body, out any) (failed string, ok bool) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(d.srv.URL+"/api/v2/trees/"+path, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(data, &e)
		return fmt.Sprintf("%d %s\n", resp.StatusCode, mask(e.Message)), false
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("POST %s: response %s: %v", path, data, err)
	}
	return "", true
}

// merge source=B target=T [force=NS.NAME,...] [dry-run]: a merge through
// the Nessie API v2, as `floe merge` sends it; the outcome, with the
// target's new head's parents when a commit was written. A dry run asks
// for floe's classification and reports each key: its conflict, if any,
// the table's class and what the merge would do (floeMerge).
func (d *scenario) merge(t *testing.T, td *datadriven.TestData) string {
	if td.HasArg("dry-run") {
		return d.dryRun(t, td)
	}
	st := d.srv.Store
	source, target := lakescenario.Arg(t, td, "source"), lakescenario.Arg(t, td, "target")
	src, err := st.GetRef(source)
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := st.GetRef(target)
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]any{"fromRefName": source, "fromHash": src.Head.String()}
	if f := lakescenario.OptArg(td, "force", ""); f != "" {
		var modes []map[string]any
		for _, k := range strings.Split(f, ",") {
			modes = append(modes, map[string]any{"key": map[string]any{"elements": strings.Split(k, ".")}, "mergeBehavior": "FORCE"})
		}
		body["keyMergeModes"] = modes
	}
	var res struct {
		WasApplied bool `json:"wasApplied"`
	}
	if failed, ok := d.post(t, fmt.Sprintf("%s@%s/history/merge", target, tgt.Head), body, &res); !ok {
		return failed
	}
	if !res.WasApplied {
		return "200 nothing to merge\n"
	}
	now, _ := st.GetRef(target)
	c, err := st.ReadCommit(t.Context(), now.Head)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("200 merged: one commit with %d parents\n", len(c.Parents))
}

// rows on=B table=T [ref=NAME]: the rows a scan of the table (or of the
// snapshot its ref NAME points at) returns, by day.
func (d *scenario) scanRows(t *testing.T, td *datadriven.TestData) string {
	tbl := d.lake.Load(t, td)
	at, err := tbl.Scan(refScan(t, td, tbl)...).ToArrowTable(t.Context())
	if err != nil {
		td.Fatalf(t, "scan: %v", err)
	}
	defer at.Release()
	return lakescenario.RowsByDay(t, td, at)
}

// snapshots on=B table=T: the table's snapshots metadata table (read
// through iceberg-go's Inspect), in the order the metadata lists them:
// sequence number, operation and records added; a cherry-picked snapshot
// shows floe.merge.source-ref and whether its floe.merge.source-snapshot-id
// is a snapshot of the table on that branch.
func (d *scenario) snapshots(t *testing.T, td *datadriven.TestData) string {
	tbl := d.lake.Load(t, td)
	rr, err := tbl.Inspect().Snapshots(t.Context())
	if err != nil {
		td.Fatalf(t, "inspect snapshots: %v", err)
	}
	defer rr.Release()
	var b strings.Builder
	for rr.Next() {
		rec := rr.RecordBatch()
		ids := rec.Column(1).(*array.Int64)
		ops := rec.Column(3).(*array.String)
		sums := rec.Column(5).(*array.Map)
		keys, vals := sums.Keys().(*array.String), sums.Items().(*array.String)
		for i := range int(rec.NumRows()) {
			p := map[string]string{}
			lo, hi := sums.ValueOffsets(i)
			for j := lo; j < hi; j++ {
				p[keys.Value(int(j))] = vals.Value(int(j))
			}
			seq := tbl.Metadata().SnapshotByID(ids.Value(i)).SequenceNumber
			fmt.Fprintf(&b, "seq %d %s +%s rows (total %s)", seq, ops.Value(i), p["added-records"], p["total-records"])
			if id, ok := p[tablemerge.SummarySourceSnapshotID]; ok {
				ref := p[tablemerge.SummarySourceRef]
				src := d.lake.Load(t, &datadriven.TestData{Cmd: "load", CmdArgs: []datadriven.CmdArg{{Key: "on", Vals: []string{ref}}, {Key: "table", Vals: []string{lakescenario.Arg(t, td, "table")}}}})
				names := "names no snapshot of " + ref
				if src.Metadata().SnapshotByID(parseInt(id)) != nil {
					names = "names a snapshot of " + ref
				}
				fmt.Fprintf(&b, " %s=%s, %s", tablemerge.SummarySourceRef, ref, names)
				switch p[tablemerge.SummaryReplayed] {
				case tablemerge.ReplayedRecord:
					b.WriteString(", replayed")
				case tablemerge.ReplayedFiles:
					b.WriteString(", replayed by files")
				}
			}
			if p[tablemerge.SummaryReplayed] == tablemerge.ReplayedRows {
				fmt.Fprintf(&b, " %s=%s, merged by row id: +%s -%s deletion vectors", tablemerge.SummarySourceRef, p[tablemerge.SummarySourceRef], p["added-delete-files"], orZero(p["removed-delete-files"]))
			}
			b.WriteString("\n")
		}
	}
	if err := rr.Err(); err != nil {
		td.Fatalf(t, "inspect snapshots: %v", err)
	}
	return b.String()
}

func orZero(s string) string {
	if s == "" {
		return "0"
	}
	return s
}

func parseInt(s string) int64 {
	var v int64
	fmt.Sscan(s, &v)
	return v
}

// files [data] [table=T]: how many metadata files and manifest lists the
// warehouse (or table T's location) holds, to show a refused merge leaves
// none behind; with data, also the data files, to show a merge writes
// none.
func (d *scenario) files(t *testing.T, td *datadriven.TestData) string {
	var meta, lists, data int
	// table=NS.NAME counts only that table's files (its location is
	// NS/NAME-<uuid> in the warehouse).
	only := ""
	if tbl := lakescenario.OptArg(td, "table", ""); tbl != "" {
		only = string(filepath.Separator) + strings.Replace(tbl, ".", string(filepath.Separator), 1) + "-"
	}
	err := filepath.WalkDir(d.srv.WarehouseDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if only != "" && !strings.Contains(p, only) {
			return nil
		}
		switch name := e.Name(); {
		case strings.HasSuffix(name, ".metadata.json"):
			meta++
		case strings.HasPrefix(name, "snap-") && strings.HasSuffix(name, ".avro"):
			lists++
		case strings.HasSuffix(name, ".parquet"):
			data++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if td.HasArg("data") {
		return fmt.Sprintf("metadata files %d, manifest lists %d, data files %d\n", meta, lists, data)
	}
	return fmt.Sprintf("metadata files %d, manifest lists %d\n", meta, lists)
}

// head branch=B: the branch's head commit: its parents and message.
func (d *scenario) head(t *testing.T, td *datadriven.TestData) string {
	ref, err := d.srv.Store.GetRef(lakescenario.OptArg(td, "branch", versionstore.DefaultBranch))
	if err != nil {
		t.Fatal(err)
	}
	c, err := d.srv.Store.ReadCommit(t.Context(), ref.Head)
	if err != nil {
		t.Fatal(err)
	}
	out := fmt.Sprintf("%d parent(s): %s\n", len(c.Parents), mask(c.Message))
	// What the commit records of each table the engine resolved, which
	// the change feed reports (classify.PropClass).
	var recorded []string
	for k, v := range c.Properties {
		if strings.HasPrefix(k, classify.PropClass) || strings.HasPrefix(k, classify.PropResolution) {
			recorded = append(recorded, k+"="+v)
		}
	}
	slices.Sort(recorded)
	for _, r := range recorded {
		out += r + "\n"
	}
	return out
}

func (d *scenario) dryRun(t *testing.T, td *datadriven.TestData) string {
	st := d.srv.Store
	source, target := lakescenario.Arg(t, td, "source"), lakescenario.Arg(t, td, "target")
	src, err := st.GetRef(source)
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := st.GetRef(target)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		WasApplied    bool `json:"wasApplied"`
		WasSuccessful bool `json:"wasSuccessful"`
		Details       []struct {
			Key struct {
				Elements []string `json:"elements"`
			} `json:"key"`
			Conflict *struct {
				ConflictType string `json:"conflictType"`
				Message      string `json:"message"`
			} `json:"conflict"`
			FloeClassification *struct {
				Class string `json:"class"`
			} `json:"floeClassification"`
			FloeMerge *struct {
				Action    string `json:"action"`
				Snapshots int    `json:"snapshots"`
				Reason    string `json:"reason"`
			} `json:"floeMerge"`
		} `json:"details"`
	}
	body := map[string]any{"fromRefName": source, "fromHash": src.Head.String(), "dryRun": true, "returnConflictAsResult": true}
	if failed, ok := d.post(t, fmt.Sprintf("%s@%s/history/merge?floe-classification=true", target, tgt.Head), body, &res); !ok {
		return failed
	}
	if now, _ := st.GetRef(target); res.WasApplied || now.Head != tgt.Head {
		t.Fatalf("a dry run moved %s (applied %v)", target, res.WasApplied)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "200 dry run: successful %v\n", res.WasSuccessful)
	for _, det := range res.Details {
		fmt.Fprintf(&b, "%s:", strings.Join(det.Key.Elements, "."))
		if det.Conflict != nil {
			fmt.Fprintf(&b, " conflict %s", det.Conflict.ConflictType)
		} else {
			b.WriteString(" no conflict")
		}
		if det.FloeClassification != nil {
			fmt.Fprintf(&b, "; class %s", det.FloeClassification.Class)
		}
		if m := det.FloeMerge; m != nil {
			fmt.Fprintf(&b, "; merge: %s %d: %s", m.Action, m.Snapshots, mask(m.Reason))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// transplant source=B target=T: a transplant of B's head commit onto T
// through the Nessie API v2 (POST .../history/transplant); the outcome,
// with the commits written.
func (d *scenario) transplant(t *testing.T, td *datadriven.TestData) string {
	st := d.srv.Store
	source, target := lakescenario.Arg(t, td, "source"), lakescenario.Arg(t, td, "target")
	src, err := st.GetRef(source)
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := st.GetRef(target)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		WasApplied bool `json:"wasApplied"`
	}
	body := map[string]any{"fromRefName": source, "hashesToTransplant": []string{src.Head.String()}}
	if failed, ok := d.post(t, fmt.Sprintf("%s@%s/history/transplant", target, tgt.Head), body, &res); !ok {
		return failed
	}
	now, _ := st.GetRef(target)
	if !res.WasApplied {
		if now.Head != tgt.Head {
			t.Fatalf("a transplant that applied nothing moved %s", target)
		}
		return "200 nothing to transplant\n"
	}
	c, err := st.ReadCommit(t.Context(), now.Head)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("200 transplanted: a commit with %d parent(s)\n", len(c.Parents))
}
