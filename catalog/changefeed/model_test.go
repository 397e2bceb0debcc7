package changefeed_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/feedevent"
)

// TestReplayRebuildsEveryBranch is the model test of the derivation: a
// random history of commits, branches, tags, merges, transplants, moves
// and deletions is made on a real store; then the feed is read in random
// page sizes, resuming from its cursors with fresh feeds (a consumer and
// a server that restart), and replayed into a simple model: a map from key
// to metadata location per branch. The model must end equal to every
// branch's tree, hold no deleted branch, and have seen every commit the
// history made exactly once as a commit, merge or transplant event on the
// branch it was made on, and every event appended beside the history (as
// the merge queue, the garbage collector and the policy wiring append
// them, alone, with a record, or riding on a branch's move) once, in the
// order they were written.
func TestReplayRebuildsEveryBranch(t *testing.T) {
	t.Parallel()
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) { replayModel(t, seed) })
	}
}

func replayModel(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 33))
	ctx := t.Context()
	s := openStore(t, t.TempDir(), nil)
	made := map[versionstore.Hash]string{} // commit -> the branch it was made on
	branches := []string{"main"}
	tags := []string{}
	var commits []versionstore.Hash
	var appended []string // ids of events appended beside the history, in order

	headOf := func(ref string) versionstore.Hash {
		r, err := s.GetRef(ref)
		if err != nil {
			t.Fatal(err)
		}
		return r.Head
	}
	if _, err := s.Commit(ctx, versionstore.CommitRequest{Branch: "main", Expected: headOf("main"), Committer: "model",
		Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"db"}, Content: &versionstore.Content{Type: versionstore.Namespace}}}}); err != nil {
		t.Fatal(err)
	}
	for step := range 150 {
		b := branches[rng.IntN(len(branches))]
		switch op := rng.IntN(20); {
		case op < 10: // a commit of 1-3 puts, deletes and renames
			head := headOf(b)
			var ops []versionstore.Operation
			used := map[string]bool{}
			for range 1 + rng.IntN(3) {
				name := fmt.Sprint("t", rng.IntN(6))
				if used[name] {
					continue
				}
				used[name] = true
				key := versionstore.ContentKey{"db", name}
				old, err := s.GetContent(ctx, head, key)
				switch {
				case err == nil && rng.IntN(4) == 0:
					ops = append(ops, versionstore.Operation{Kind: versionstore.OpDelete, Key: key})
				case err == nil && rng.IntN(4) == 0:
					to := versionstore.ContentKey{"db", fmt.Sprintf("r%d%s", step, name)}
					ops = append(ops, versionstore.Operation{Kind: versionstore.OpDelete, Key: key},
						versionstore.Operation{Kind: versionstore.OpPut, Key: to, Content: old})
				default:
					c := &versionstore.Content{Type: versionstore.IcebergTable, MetadataLocation: fmt.Sprintf("s3://w/%s/%d.json", name, step), SnapshotID: int64(step)}
					if err == nil {
						c.ID = old.ID
					}
					ops = append(ops, versionstore.Operation{Kind: versionstore.OpPut, Key: key, Content: c})
				}
			}
			res, err := s.Commit(ctx, versionstore.CommitRequest{Branch: b, Expected: head, Operations: ops, Committer: "model"})
			if err != nil {
				t.Fatalf("step %d: commit on %s: %v", step, b, err)
			}
			made[res.Commit.Hash] = b
			commits = append(commits, res.Commit.Hash)
		case op < 12: // a branch or a tag at some branch's head
			name := fmt.Sprint("b", step)
			typ := versionstore.Branch
			if op == 11 {
				name, typ = fmt.Sprint("v", step), versionstore.Tag
			}
			if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: name, Type: typ, Target: headOf(b), Principal: "model"}); err != nil {
				t.Fatal(err)
			}
			if typ == versionstore.Tag {
				tags = append(tags, name)
			} else {
				branches = append(branches, name)
			}
		case op < 14: // a merge of one branch into another
			src := branches[rng.IntN(len(branches))]
			if src == b {
				continue
			}
			res, err := s.Merge(ctx, versionstore.MergeRequest{Target: b, ExpectedTarget: headOf(b), From: headOf(src), FromRef: src, Committer: "model"})
			if err == nil && res.WasApplied {
				made[res.ResultantHash] = b
				commits = append(commits, res.ResultantHash)
			}
		case op < 15 && len(commits) > 0: // a transplant of one commit
			c := commits[rng.IntN(len(commits))]
			res, err := s.Transplant(ctx, versionstore.TransplantRequest{Target: b, ExpectedTarget: headOf(b), Commits: []versionstore.Hash{c}, Committer: "model"})
			if err == nil && res.WasApplied {
				for _, nc := range res.Commits {
					made[nc.Hash] = b
					commits = append(commits, nc.Hash)
				}
			}
		case op < 17 && len(commits) > 0: // a move to any commit, or a tag's
			to := commits[rng.IntN(len(commits))]
			name := b
			if op == 16 && len(tags) > 0 {
				name = tags[rng.IntN(len(tags))]
			}
			assign := versionstore.AssignRefRequest{Name: name, Expected: headOf(name), Target: to, Principal: "model"}
			id := fmt.Sprint("a", step)
			if name == b && step%2 == 0 { // no draw from rng: the histories stay those of the seeds
				// A landing's events ride on the move.
				ev, err := feedevent.QueueEvent(b, "model", feedevent.QueueChange{Request: id, From: "validating", To: "merged"})
				if err != nil {
					t.Fatal(err)
				}
				assign.Events = []versionstore.LogEvent{ev}
			}
			if _, err := s.AssignRef(ctx, assign); err != nil {
				t.Fatal(err)
			}
			if len(assign.Events) > 0 {
				appended = append(appended, id)
			}
		case op < 18 && b != "main": // a deletion
			if err := s.DeleteRef(ctx, versionstore.DeleteRefRequest{Name: b, Expected: headOf(b), Principal: "model"}); err != nil {
				t.Fatal(err)
			}
			branches = slices.DeleteFunc(branches, func(x string) bool { return x == b })
		case op == 18: // a request's change of state, with its record
			id := fmt.Sprint("q", step)
			ev, err := feedevent.QueueEvent(b, "model", feedevent.QueueChange{Request: id, To: "queued"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.AppendEvent(ctx, ev, versionstore.Record{Key: "model/" + id, Value: []byte("queued"), If: &versionstore.RecordCondition{}}); err != nil {
				t.Fatal(err)
			}
			appended = append(appended, id)
		case op == 19: // a GC run, on no reference
			id := fmt.Sprint("g", step)
			ev, err := feedevent.GCEvent("model", feedevent.GCRun{ID: id, Outcome: "ok"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.AppendEvent(ctx, ev); err != nil {
				t.Fatal(err)
			}
			appended = append(appended, id)
		}
	}

	// Read the whole feed in random pages, restarting the feed now and then.
	var events []changefeed.Event
	feed := changefeed.New(s, changefeed.Options{})
	after := changefeed.Start
	for {
		if rng.IntN(5) == 0 {
			feed = changefeed.New(s, changefeed.Options{})
		}
		page, err := feed.Read(ctx, changefeed.Query{After: after, Limit: 1 + rng.IntN(7)})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Events) == 0 {
			break
		}
		for _, ev := range page.Events {
			if len(events) > 0 && !events[len(events)-1].ID.Before(ev.ID) {
				t.Fatalf("event %s after %s", ev.ID, events[len(events)-1].ID)
			}
			events = append(events, ev)
		}
		after = page.Next
	}

	// Replay.
	state := map[string]map[string]string{} // branch -> key -> metadata location
	at := map[string]map[string]string{versionstore.NoAncestor.String(): {}}
	seen := map[string]int{}
	var beside []string // the appended events' ids as the feed shows them
	for _, ev := range events {
		if ev.RefType == "TAG" {
			continue
		}
		switch ev.Type {
		case changefeed.BranchCreated:
			st, ok := at[ev.Commit]
			if !ok {
				t.Fatalf("%s: branch %s created at %s, a commit the feed never showed", ev.ID, ev.Ref, ev.Commit)
			}
			state[ev.Ref] = maps.Clone(st)
		case changefeed.BranchDeleted:
			delete(state, ev.Ref)
		case changefeed.CommitMade, changefeed.MergeMade, changefeed.TransplantMade:
			if b, ok := made[mustHash(t, ev.Commit)]; ok && b == ev.Ref {
				seen[ev.Commit]++
			}
		case changefeed.BranchMoved:
		case changefeed.QueueChanged:
			beside = append(beside, ev.Queue.Request)
		case changefeed.GCCompleted:
			beside = append(beside, ev.GC.ID)
		default:
			c := ev.Content
			key := fmt.Sprint(c.Key)
			st := state[ev.Ref]
			switch ev.Type {
			case changefeed.NamespaceCreated, changefeed.NamespaceUpdated:
				st[key] = "namespace"
			case changefeed.TableCreated, changefeed.TableUpdated:
				st[key] = c.Iceberg.MetadataLocation
			case changefeed.TableRenamed:
				delete(st, fmt.Sprint(c.PreviousKey))
				st[key] = c.Iceberg.MetadataLocation
			case changefeed.TableDropped, changefeed.NamespaceDropped:
				delete(st, key)
			default:
				t.Fatalf("unexpected event %s", ev.Type)
			}
		}
		if ev.Commit != "" {
			if st, ok := state[ev.Ref]; ok {
				at[ev.Commit] = maps.Clone(st)
			}
		}
	}
	for h, b := range made {
		if n := seen[h.String()]; n != 1 {
			t.Errorf("commit %s made on %s: seen %d times on it", h, b, n)
		}
	}
	if !slices.Equal(beside, appended) {
		t.Fatalf("events beside the history: the feed shows %v, %v were appended", beside, appended)
	}
	if got, want := slices.Sorted(maps.Keys(state)), slices.Sorted(slices.Values(branches)); !slices.Equal(got, want) {
		t.Fatalf("branches replayed %v, store has %v", got, want)
	}
	for _, b := range branches {
		entries, _, err := s.Entries(ctx, headOf(b), versionstore.EntriesOptions{WithContent: true, Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{}
		for _, e := range entries {
			if e.Content.Type == versionstore.Namespace {
				want[fmt.Sprint([]string(e.Key))] = "namespace"
			} else {
				want[fmt.Sprint([]string(e.Key))] = e.Content.MetadataLocation
			}
		}
		if !maps.Equal(state[b], want) {
			t.Errorf("branch %s replayed %v; its tree holds %v", b, state[b], want)
		}
	}
	t.Logf("%d events replayed, %d commits, %d branches, %d events beside them", len(events), len(made), len(branches), len(appended))
}

func mustHash(t *testing.T, s string) versionstore.Hash {
	h, err := versionstore.ParseHash(s)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
