package mergeengine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/mergeengine"
	"github.com/floe-catalog/floe/versionstore"
)

// racingStore lands another merge of the same source, at an older commit,
// just before the engine commits its first plan with resolved content:
// the merge base moves under the plan.
type racingStore struct {
	mergeengine.Store
	race   func()
	writes atomic.Int32
}

func (s *racingStore) Merge(ctx context.Context, req versionstore.MergeRequest) (*versionstore.MergeResult, error) {
	resolved := false
	for _, m := range req.KeyModes {
		resolved = resolved || m.Resolved != nil
	}
	if resolved && !req.DryRun && s.writes.Add(1) == 1 {
		s.race()
	}
	return s.Store.Merge(ctx, req)
}

// raceLake makes a branch whose first commit appends to r.t0 (which main
// appends to as well) and whose second appends to r.t1 only, and returns
// the two commits: merging the first moves the merge base of a merge of
// the second past r.t0's change.
func raceLake(t *testing.T, d *scenario, branch string, first bool) (c1, c2 versionstore.Hash) {
	t.Helper()
	lines := []string{"branch " + branch}
	if first {
		lines = append([]string{"table table=r.t0", "table table=r.t1"}, lines...)
	}
	for _, l := range lines {
		d.run(t, directive(l))
	}
	d.run(t, directive("append on="+branch+" table=r.t0 day=2026-08-20 rows=1"))
	ref, _ := d.srv.Store.GetRef(branch)
	c1 = ref.Head
	d.run(t, directive("append table=r.t0 day=2026-08-21 rows=1"))
	d.run(t, directive("append on="+branch+" table=r.t1 day=2026-08-20 rows=1"))
	ref, _ = d.srv.Store.GetRef(branch)
	return c1, ref.Head
}

// TestMergeBaseMovesUnderThePlan: a merge of etl's head is planned (r.t0
// changed on both sides, resolved by a cherry-pick); before it commits, a
// merge of etl's older commit lands, which holds etl's change of r.t0, so
// the store no longer sees the source change r.t0 and refuses the
// resolution as unused. That was answered 400 (issue 32, point 5); the
// engine plans again on the new base and the merge lands, with every row
// once.
func TestMergeBaseMovesUnderThePlan(t *testing.T) {
	d := newScenario(t)
	c1, c2 := raceLake(t, d, "etl", true)
	wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: d.srv.Warehouse})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := mergeengine.New(mergeengine.Options{Store: d.srv.Store, Warehouses: []*icebergtable.Warehouse{wh}})
	if err != nil {
		t.Fatal(err)
	}
	head, _ := d.srv.Store.GetRef("main")
	st := &racingStore{Store: d.srv.Store, race: func() {
		res, err := plain.MergeTables(t.Context(), versionstore.MergeRequest{Target: "main", ExpectedTarget: head.Head, From: c1, FromRef: "etl", Committer: "other"})
		if err != nil || !res.WasApplied {
			t.Errorf("the racing merge of %s: %v", c1, err)
		}
	}}
	eng, err := mergeengine.New(mergeengine.Options{Store: st, Warehouses: []*icebergtable.Warehouse{wh}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := eng.MergeTables(t.Context(), versionstore.MergeRequest{Target: "main", ExpectedTarget: head.Head, From: c2, FromRef: "etl", Committer: "test"})
	if err != nil {
		t.Fatalf("merge of %s after the base moved: %v", c2, err)
	}
	if !res.WasApplied {
		t.Fatalf("merge of %s not applied", c2)
	}
	for table, want := range map[string]string{"r.t0": "2026-08-20: 1\n2026-08-21: 2\n", "r.t1": "2026-08-20: 3\n"} {
		if got := d.scanRows(t, directive("rows table="+table)); got != want {
			t.Fatalf("%s rows:\n%s\nwant:\n%s", table, got, want)
		}
	}
}

// TestRacingMergesOfOneBranch: merges of two commits of one branch sent
// at once through the Nessie API, round after round, never answer 400:
// each lands (200) or, past the engine's bound, is a 409
// REFERENCE_CONFLICT a client retries. Run it under -race.
func TestRacingMergesOfOneBranch(t *testing.T) {
	d := newScenario(t)
	const rounds = 6
	landed := 0
	for round := range rounds {
		branch := fmt.Sprintf("etl%d", round)
		c1, c2 := raceLake(t, d, branch, round == 0)
		head, _ := d.srv.Store.GetRef("main")
		var wg sync.WaitGroup
		statuses := make([]int, 2)
		answers := make([][]byte, 2)
		for i, c := range []versionstore.Hash{c1, c2} {
			body, _ := json.Marshal(map[string]any{"fromRefName": branch, "fromHash": c.String()})
			wg.Go(func() {
				resp, err := http.Post(d.srv.URL+"/api/v2/trees/main@"+head.Head.String()+"/history/merge", "application/json", bytes.NewReader(body))
				if err != nil {
					t.Errorf("round %d, merge %d: %v", round, i+1, err)
					return
				}
				defer resp.Body.Close()
				statuses[i] = resp.StatusCode
				answers[i], _ = io.ReadAll(resp.Body)
			})
		}
		wg.Wait()
		for i, status := range statuses {
			var e struct {
				ErrorCode string `json:"errorCode"`
			}
			_ = json.Unmarshal(answers[i], &e)
			switch {
			case status == http.StatusOK:
				landed++
			case status == http.StatusConflict && e.ErrorCode == "REFERENCE_CONFLICT":
			default:
				t.Fatalf("round %d, merge %d: %d %s", round, i+1, status, answers[i])
			}
		}
		// Whatever the order, the branch's head is merged once it is
		// merged again (a no-op if it landed).
		if got := d.run(t, directive("merge source="+branch+" target=main")); !strings.HasPrefix(got, "200 ") {
			t.Fatalf("round %d: merge %s again: %s", round, branch, got)
		}
	}
	rows := d.scanRows(t, directive("rows table=r.t1"))
	if n := countRows(rows); n != rounds {
		t.Fatalf("r.t1 holds %d rows after %d rounds, want one per round:\n%s", n, rounds, rows)
	}
	if n := countRows(d.scanRows(t, directive("rows table=r.t0"))); n != 2*rounds {
		t.Fatalf("r.t0 holds %d rows after %d rounds, want two per round", n, rounds)
	}
	t.Logf("%d of %d racing merges answered 200", landed, 2*rounds)
}

// countRows counts the row ids of rows' "day: id id ..." lines.
func countRows(rows string) int {
	n := 0
	for line := range strings.Lines(rows) {
		_, ids, _ := strings.Cut(line, ":")
		n += len(strings.Fields(ids))
	}
	return n
}
