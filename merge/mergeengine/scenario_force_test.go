package mergeengine_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/floe-catalog/floe/conformance/testkit/lakescenario"
	"github.com/floe-catalog/floe/merge/classify"
)

// force-plan source=B target=T force=NS.NAME,...: what a merge that takes
// the listed tables whole from the source (FORCE) would throw away of the
// target, as both dry runs report it: the Nessie API v2's
// (?floe-classification=true, each forced key's floeMerge) and floe's own
// POST /api/floe/v1/merge-plans (its tables). Both must agree; the output
// is one block per forced table that the target changed: the summary,
// then the snapshots, files and rows in detail. A forced table the target
// did not change is listed as "discards nothing".
func (d *scenario) forcePlan(t *testing.T, td *datadriven.TestData) string {
	st := d.srv.Store
	source, target := lakescenario.Arg(t, td, "source"), lakescenario.Arg(t, td, "target")
	forced := strings.Split(lakescenario.Arg(t, td, "force"), ",")
	src, err := st.GetRef(source)
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := st.GetRef(target)
	if err != nil {
		t.Fatal(err)
	}

	// The Nessie API's dry run, as `floe merge --dry-run` sends it.
	var modes []map[string]any
	var keys [][]string
	for _, k := range forced {
		modes = append(modes, map[string]any{"key": map[string]any{"elements": strings.Split(k, ".")}, "mergeBehavior": "FORCE"})
		keys = append(keys, strings.Split(k, "."))
	}
	body := map[string]any{"fromRefName": source, "fromHash": src.Head.String(), "dryRun": true, "returnConflictAsResult": true,
		"keyMergeModes": modes}
	var res struct {
		WasApplied    bool `json:"wasApplied"`
		WasSuccessful bool `json:"wasSuccessful"`
		Details       []struct {
			Key struct {
				Elements []string `json:"elements"`
			} `json:"key"`
			MergeBehavior string `json:"mergeBehavior"`
			FloeMerge     *struct {
				Action   string            `json:"action"`
				Reason   string            `json:"reason"`
				Discards *classify.Discard `json:"discards"`
			} `json:"floeMerge"`
		} `json:"details"`
	}
	if failed, ok := d.post(t, fmt.Sprintf("%s@%s/history/merge?floe-classification=true", target, tgt.Head), body, &res); !ok {
		return failed
	}
	nessieDiscards := map[string]*classify.Discard{}
	for _, det := range res.Details {
		if m := det.FloeMerge; m != nil && m.Action == "force" {
			if m.Discards == nil {
				t.Fatalf("nessie: %s: action force without discards", det.Key.Elements)
			}
			nessieDiscards[strings.Join(det.Key.Elements, ".")] = m.Discards
		}
	}

	// floe's own API.
	raw, _ := json.Marshal(map[string]any{"source": source, "target": target, "force": keys})
	resp, err := http.Post(d.srv.URL+"/api/floe/v1/merge-plans", "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("merge-plans: %d %s", resp.StatusCode, data)
	}
	var plan struct {
		Mergeable bool `json:"mergeable"`
		Tables    []struct {
			Key      []string          `json:"key"`
			Action   string            `json:"action"`
			Reason   string            `json:"reason"`
			Discards *classify.Discard `json:"discards"`
		} `json:"tables"`
	}
	if err := json.Unmarshal(data, &plan); err != nil {
		t.Fatalf("merge-plans: %s: %v", data, err)
	}
	floeDiscards := map[string]*classify.Discard{}
	for _, tb := range plan.Tables {
		if tb.Action == "force" {
			floeDiscards[strings.Join(tb.Key, ".")] = tb.Discards
		}
	}
	if now, _ := st.GetRef(target); res.WasApplied || now.Head != tgt.Head {
		t.Fatalf("a dry run moved %s", target)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "nessie: successful %v; floe: mergeable %v\n", res.WasSuccessful, plan.Mergeable)
	for _, k := range forced {
		nd, fd := nessieDiscards[k], floeDiscards[k]
		nj, _ := json.Marshal(nd)
		fj, _ := json.Marshal(fd)
		if !bytes.Equal(nj, fj) {
			t.Errorf("%s: the Nessie API and floe's API disagree:\nnessie %s\nfloe   %s", k, nj, fj)
		}
		if nd == nil {
			fmt.Fprintf(&b, "%s: discards nothing\n", k)
			continue
		}
		if strings.Join(nd.Key, ".") != k {
			t.Errorf("%s: discard names key %v", k, nd.Key)
		}
		fmt.Fprintf(&b, "%s: %s\n", k, mask(nd.Summary))
		var ops []string
		for _, s := range nd.Snapshots {
			ops = append(ops, s.Operation)
		}
		fmt.Fprintf(&b, "  snapshots: %d (%s)\n", len(nd.Snapshots), strings.Join(ops, ", "))
		for _, fc := range []struct {
			name string
			c    classify.FileChanges
		}{{"data files", nd.DataFiles}, {"delete files", nd.DeleteFiles}} {
			fmt.Fprintf(&b, "  %s: added %d (%d rows) %s, removed %d (%d rows) %s\n", fc.name,
				fc.c.AddedCount, fc.c.AddedRecords, fileDays(fc.c.Added), fc.c.RemovedCount, fc.c.RemovedRecords, fileDays(fc.c.Removed))
		}
		if len(nd.StructuralChanges) > 0 {
			fmt.Fprintf(&b, "  structure: %s\n", strings.Join(nd.StructuralChanges, "; "))
		}
		if nd.SourceDropped || nd.TargetDropped {
			fmt.Fprintf(&b, "  dropped: source %v, target %v\n", nd.SourceDropped, nd.TargetDropped)
		}
		fmt.Fprintf(&b, "  target rows: %d\n", nd.TargetTotalRecords)
	}
	return b.String()
}

// fileDays lists the files' partitions: "[day=2026-08-20 day=2026-08-21]".
func fileDays(fs []classify.File) string {
	var ps []string
	for _, f := range fs {
		ps = append(ps, f.Partition.Path)
	}
	return "[" + strings.Join(ps, " ") + "]"
}
