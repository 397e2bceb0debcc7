package gc_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/floe-catalog/floe/housekeeping/gc"
	"github.com/floe-catalog/floe/versionstore"
)

// TestRandomHistories writes random sequences of branch, tag, append,
// expire-snapshots, drop, merge and branch deletion with iceberg-go
// through a real floe, records what a full scan of every table on every
// reference returns, makes every file old, collects (a dry run, then a
// run, with a random history rule), and scans everything again: the rows
// must be the same. FLOE_GC_SEED picks one seed; otherwise a few run.
func TestRandomHistories(t *testing.T) {
	if testing.Short() {
		t.Skip("writes real tables; skipped with -short")
	}
	seeds := []uint64{1, 2, 3, 4, 5, 6}
	if s := os.Getenv("FLOE_GC_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		seeds = []uint64{n}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { randomHistory(t, seed) })
	}
}

func randomHistory(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed))
	l := newLake(t)
	branches := []string{"main"}
	var tags []string
	tables := map[string][]string{"main": {}} // tables per branch, as the model knows them
	pick := func(s []string) string { return s[rng.IntN(len(s))] }
	nextTable := 0
	var ops []string
	for step := range 30 {
		b := pick(branches)
		switch op := rng.IntN(10); {
		case op < 2 || len(tables[b]) == 0:
			nextTable++
			name := fmt.Sprintf("ns%d.t%d", nextTable%2, nextTable)
			l.Create(b, name)
			l.AppendRows(b, name, 1+rng.IntN(5))
			tables[b] = append(tables[b], name)
			ops = append(ops, "create "+name+" on "+b)
		case op < 4:
			name := pick(tables[b])
			l.AppendRows(b, name, 1+rng.IntN(5))
			ops = append(ops, "append "+name+" on "+b)
		case op == 4:
			name := pick(tables[b])
			id := l.LastID() - int64(rng.IntN(5))
			l.DeleteID(b, name, id)
			ops = append(ops, fmt.Sprintf("delete id %d from %s on %s", id, name, b))
		case op == 5:
			nb := fmt.Sprintf("b%d", step)
			l.branch(nb, b, versionstore.Branch)
			branches = append(branches, nb)
			tables[nb] = slices.Clone(tables[b])
			ops = append(ops, "branch "+nb+" from "+b)
		case op == 6:
			tg := fmt.Sprintf("tag%d", step)
			l.branch(tg, b, versionstore.Tag)
			tags = append(tags, tg)
			ops = append(ops, "tag "+tg+" at "+b)
		case op == 7:
			name := pick(tables[b])
			l.ExpireAllButLast(b, name)
			ops = append(ops, "expire "+name+" on "+b)
		case op == 8:
			name := pick(tables[b])
			l.Drop(b, name)
			tables[b] = slices.DeleteFunc(tables[b], func(s string) bool { return s == name })
			ops = append(ops, "drop "+name+" on "+b)
		default:
			if len(branches) < 2 {
				continue
			}
			from := pick(branches)
			if from == b {
				continue
			}
			if rng.IntN(2) == 0 && from != "main" {
				l.deleteRef(from)
				branches = slices.DeleteFunc(branches, func(s string) bool { return s == from })
				delete(tables, from)
				ops = append(ops, "delete branch "+from)
				continue
			}
			src, _ := l.srv.Store.GetRef(from)
			dst, _ := l.srv.Store.GetRef(b)
			_, err := l.srv.Store.Merge(t.Context(), versionstore.MergeRequest{Target: b, ExpectedTarget: dst.Head, From: src.Head, FromRef: from})
			ops = append(ops, fmt.Sprintf("merge %s into %s (%v)", from, b, err))
			if err == nil {
				for _, name := range tables[from] {
					if !slices.Contains(tables[b], name) {
						tables[b] = append(tables[b], name)
					}
				}
			}
		}
	}
	// The truth: what every live reference reads now, whatever the model
	// thought.
	truth := l.readEverything(append(slices.Clone(branches), tags...))
	l.age(old)
	rule := gc.HistoryRule{Commits: 1 + rng.IntN(3)} // bounded: old commits do go
	c := l.collector(gc.Options{History: func(context.Context, *versionstore.Ref) (gc.HistoryRule, error) { return rule, nil }})
	dry, err := c.Run(t.Context(), gc.RunOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Run(t.Context(), gc.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Deleted != dry.Deleted {
		t.Errorf("the run deleted %d, its dry run said %d", rep.Deleted, dry.Deleted)
	}
	after := l.readEverything(append(slices.Clone(branches), tags...))
	for k, want := range truth {
		if got, ok := after[k]; !ok || !slices.Equal(got, want) {
			t.Fatalf("after gc (rule %+v, %d files deleted), %s reads %v, before %v\nops:\n%v", rule, rep.Deleted, k, got, want, ops)
		}
	}
	if rep.Deleted == 0 {
		t.Errorf("nothing deleted: the sequence tested nothing\nops:\n%v", ops)
	}
	t.Logf("%d ops, rule %+v: %d files deleted, %d live", len(ops), rule, rep.Deleted, rep.Live)
}

// readEverything scans every table on every ref in full: "ref table" → ids.
func (l *lake) readEverything(refs []string) map[string][]int64 {
	l.t.Helper()
	out := map[string][]int64{}
	for _, ref := range refs {
		r, err := l.srv.Store.GetRef(ref)
		if err != nil {
			l.t.Fatal(err)
		}
		entries, _, err := l.srv.Store.Entries(l.t.Context(), r.Head, versionstore.EntriesOptions{})
		if err != nil {
			l.t.Fatal(err)
		}
		for _, e := range entries {
			if e.Type != versionstore.IcebergTable {
				continue
			}
			name := e.Key[0] + "." + e.Key[1]
			at, err := l.Load(ref, name).Scan().ToArrowTable(l.t.Context())
			if err != nil {
				l.t.Fatalf("scan %s on %s: %v", name, ref, err)
			}
			var ids []int64
			for _, ch := range at.Column(0).Data().Chunks() {
				ids = append(ids, ch.(*array.Int64).Int64Values()...)
			}
			at.Release()
			slices.Sort(ids)
			out[ref+" "+name] = ids
		}
	}
	return out
}
