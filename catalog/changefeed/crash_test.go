package changefeed_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/catalog/changefeed/feedtest"
	"github.com/floe-catalog/floe/conformance/testkit/crashchild"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/feedevent"
)

// TestCrashResume kills a real process with SIGKILL in the middle of a
// burst of commits, merges and merge-queue landings, again and again on
// one directory, while a
// consumer inside that process follows the feed. The consumer handles
// each event by printing it; its cursor is the id of the last event it
// printed, which the next process resumes from. At the end the parent
// reads the whole feed of the recovered store and checks:
//
//   - the events the consumer saw, across every crash, are exactly the
//     feed's events: each once, in order, nothing missing;
//   - each is the event the recovered store derives at that id (so no
//     event was shown for a move that was lost);
//   - every commit a writer was told succeeded is in it, once, as a commit
//     or merge event on its branch;
//   - every event written beside the history with a record (as the merge
//     queue writes a request's change of state) that a writer was told
//     succeeded is in it once, and every such event in it has its record
//     in the recovered store: no state without its event, no event
//     without its state;
//   - every landing a writer was told succeeded (the store calls the
//     merge queue makes: a candidate merge commit built on the target's
//     head, then AssignRef of the target to it with the request's
//     record and queue.changed event in the same write) is in it once:
//     one branch.moved of the target to the candidate, the candidate's
//     merge event on the target, and the request's "merged" event naming
//     it; and every "merged" event in the feed has its request's record
//     saying merged and its commit on the target: no landing reported
//     that did not happen.
//
// The child is this test binary re-executed with crashChildEnv set.
func TestCrashResume(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("kills processes")
	}
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	cursor := changefeed.Start
	var seen []seenEvent
	acked := map[string]string{}     // commit -> branch
	ackedEvents := map[string]bool{} // record keys of acknowledged events
	landed := map[string][2]string{} // request -> acknowledged landing: commit, target
	const cycles = 5
	for cycle := range cycles {
		lines := runCrashChild(t, dir, cursor, cycle, time.Duration(300+rng.IntN(900))*time.Millisecond)
		for _, l := range lines {
			f := strings.Fields(l)
			switch {
			case f[0] == "ACK" && len(f) == 3:
				acked[f[1]] = f[2]
			case f[0] == "ACKEV" && len(f) == 2:
				ackedEvents[f[1]] = true
			case f[0] == "ACKLAND" && len(f) == 4:
				landed[f[1]] = [2]string{f[2], f[3]}
			case f[0] == "SEEN" && len(f) == 5:
				id, err := changefeed.ParseCursor(f[1])
				if err != nil {
					t.Fatal(err)
				}
				seen = append(seen, seenEvent{id: id, typ: f[2], ref: strings.TrimPrefix(f[3], "-"), commit: strings.TrimPrefix(f[4], "-")})
				cursor = id
			case f[0] == "NEXT" && len(f) == 2:
				next, err := changefeed.ParseCursor(f[1])
				if err != nil {
					t.Fatal(err)
				}
				if cursor.Before(next) {
					cursor = next
				}
			}
		}
		t.Logf("cycle %d: %d acks, %d events seen so far, cursor %s", cycle, len(acked), len(seen), cursor)
	}

	s := openStore(t, dir, nil)
	feed := changefeed.New(s, changefeed.Options{})
	// The consumer resumes once more, in this process, and reads the rest.
	rest := feedtest.ReadAll(t, feed, cursor)
	for _, ev := range rest {
		seen = append(seen, seenEvent{id: ev.ID, typ: string(ev.Type), ref: ev.Ref, commit: ev.Commit})
	}
	full := feedtest.ReadAll(t, feed, changefeed.Start)
	if len(seen) != len(full) {
		t.Errorf("the consumer saw %d events; the feed has %d", len(seen), len(full))
	}
	for i := range min(len(seen), len(full)) {
		w := full[i]
		if g := seen[i]; g.id != w.ID || g.typ != string(w.Type) || g.ref != w.Ref || g.commit != w.Commit {
			t.Fatalf("event %d: the consumer saw %+v; the recovered feed has %s %s %s at %s", i, g, w.Type, w.Ref, w.Commit, w.ID)
		}
	}
	commits := map[string]int{}
	for _, ev := range full {
		if ev.Type == changefeed.CommitMade || ev.Type == changefeed.MergeMade {
			commits[ev.Commit+" "+ev.Ref]++
		}
	}
	for h, b := range acked {
		if n := commits[h+" "+b]; n != 1 {
			t.Errorf("acknowledged commit %s on %s: %d events", h, b, n)
		}
	}
	requests := map[string]int{} // queued events per request
	merged := map[string]int{}   // "request commit target" of merged events
	moves := map[string]int{}    // "target commit" of branch moves
	for _, ev := range full {
		if ev.Type == changefeed.BranchMoved {
			moves[ev.Ref+" "+ev.Move.To]++
		}
		if ev.Type != changefeed.QueueChanged {
			continue
		}
		rec, err := s.GetRecord(t.Context(), ev.Queue.Request)
		if err != nil {
			t.Errorf("event %s reports request %s, whose record is not in the store: %v", ev.ID, ev.Queue.Request, err)
			continue
		}
		if ev.Queue.To != "merged" {
			requests[ev.Queue.Request]++
			continue
		}
		merged[ev.Queue.Request+" "+ev.Queue.Commit+" "+ev.Ref]++
		if string(rec.Value) != "merged" {
			t.Errorf("event %s reports request %s merged; its record says %q", ev.ID, ev.Queue.Request, rec.Value)
		}
		h, err := versionstore.ParseHash(ev.Queue.Commit)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := s.GetRef(ev.Ref)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := s.IsAncestor(t.Context(), h, ref.Head); err != nil || !ok {
			t.Errorf("event %s reports %s landed on %s, whose history does not have it (%v)", ev.ID, ev.Queue.Commit, ev.Ref, err)
		}
	}
	for k := range ackedEvents {
		if requests[k] != 1 {
			t.Errorf("acknowledged event of %s: %d in the feed", k, requests[k])
		}
	}
	for k, n := range requests {
		if n != 1 {
			t.Errorf("request %s: %d events", k, n)
		}
	}
	for k, n := range merged {
		if n != 1 {
			t.Errorf("landing %s: %d merged events", k, n)
		}
	}
	for req, l := range landed {
		commit, target := l[0], l[1]
		if n := merged[req+" "+commit+" "+target]; n != 1 {
			t.Errorf("acknowledged landing of %s as %s on %s: %d merged events", req, commit, target, n)
		}
		if n := moves[target+" "+commit]; n != 1 {
			t.Errorf("acknowledged landing of %s: %d moves of %s to %s", req, n, target, commit)
		}
		if n := commits[commit+" "+target]; n != 1 {
			t.Errorf("acknowledged landing of %s: %d merge events of %s on %s", req, n, commit, target)
		}
	}
	if len(landed) == 0 {
		t.Error("no landing was acknowledged: the burst did not exercise the merge queue's writes")
	}
	t.Logf("%d acknowledged commits, %d acknowledged events beside them, %d acknowledged landings, %d events, all seen once",
		len(acked), len(ackedEvents), len(landed), len(full))
}

type seenEvent struct {
	id               changefeed.Cursor
	typ, ref, commit string
}

const crashChildEnv = "FLOE_CHANGEFEED_CRASH_CHILD"

// runCrashChild runs one child on dir until it is killed after life, and
// returns the complete lines it printed.
func runCrashChild(t *testing.T, dir string, cursor changefeed.Cursor, cycle int, life time.Duration) []string {
	t.Helper()
	return crashchild.Run(t, "TestCrashChild", fmt.Sprintf("%s=%s|%s|%d", crashChildEnv, dir, cursor, cycle), life)
}

// TestCrashChild is the child of TestCrashResume; it does nothing unless
// run by it.
func TestCrashChild(t *testing.T) {
	t.Parallel()
	spec := os.Getenv(crashChildEnv)
	if spec == "" {
		t.Skip("run by TestCrashResume")
	}
	parts := strings.Split(spec, "|")
	dir, cycle := parts[0], parts[2]
	cursor, err := changefeed.ParseCursor(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s := openStore(t, dir, nil)
	var mu sync.Mutex
	print := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
	branches := []string{"main", "b1", "b2"}
	for _, b := range branches[1:] {
		if _, err := s.GetRef(b); err == nil {
			continue
		}
		r, _ := s.GetRef("main")
		if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: b, Type: versionstore.Branch, Target: r.Head, Principal: "crash"}); err != nil {
			t.Fatal(err)
		}
	}
	// The consumer: prints every event it handles, and where it stands.
	go func() {
		feed := changefeed.New(s, changefeed.Options{PollInterval: 5 * time.Millisecond})
		for {
			wctx, cancel := context.WithTimeout(ctx, time.Second)
			page, err := feed.Wait(wctx, changefeed.Query{After: cursor, Limit: 50})
			cancel()
			if err != nil {
				print("ERROR %v", err)
				return
			}
			for _, ev := range page.Events {
				print("SEEN %s %s %s %s", ev.ID, ev.Type, orDash(ev.Ref), orDash(ev.Commit))
			}
			print("NEXT %s", page.Next)
			cursor = page.Next
		}
	}()
	// The writers: commits to every branch, and merges between them.
	var wg sync.WaitGroup
	for w := range 6 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for i := 0; ; i++ {
				b := branches[rng.IntN(len(branches))]
				r, err := s.GetRef(b)
				if err != nil {
					t.Error(err)
					return
				}
				if rng.IntN(8) == 0 {
					src := branches[rng.IntN(len(branches))]
					sr, _ := s.GetRef(src)
					if src == b {
						continue
					}
					res, err := s.Merge(ctx, versionstore.MergeRequest{Target: b, ExpectedTarget: r.Head, From: sr.Head, Committer: "crash"})
					if err == nil && res.WasApplied {
						print("ACK %s %s", res.ResultantHash, b)
					}
					continue
				}
				if rng.IntN(8) == 2 {
					land(ctx, t, s, print, fmt.Sprintf("c%s_w%d_%d", cycle, w, i), b, branches[rng.IntN(len(branches))])
					continue
				}
				if rng.IntN(8) == 1 {
					// An event beside the history, with the record of the
					// state it reports, as the merge queue writes them.
					rk := fmt.Sprintf("crash/c%s_w%d_%d", cycle, w, i)
					ev, err := feedevent.QueueEvent(b, "crash", feedevent.QueueChange{Request: rk, To: "queued"})
					if err != nil {
						t.Error(err)
						return
					}
					if _, err := s.AppendEvent(ctx, ev, versionstore.Record{Key: rk, Value: []byte("queued"),
						If: &versionstore.RecordCondition{Exists: false}}); err == nil {
						print("ACKEV %s", rk)
					} else {
						fmt.Fprintln(os.Stderr, "event:", err)
					}
					continue
				}
				key := versionstore.ContentKey{fmt.Sprintf("c%s_w%d_%d", cycle, w, i)} // new each time: no update needs a content id
				res, err := s.Commit(ctx, versionstore.CommitRequest{Branch: b, Expected: r.Head, Committer: "crash",
					Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: key, Content: &versionstore.Content{Type: versionstore.Namespace, Properties: map[string]string{"i": fmt.Sprint(i)}}}}})
				if err == nil {
					print("ACK %s %s", res.Commit.Hash, b)
				} else {
					fmt.Fprintln(os.Stderr, "commit:", err)
				}
			}
		})
	}
	wg.Wait()
}

// land does what the merge queue does to land one request from source on
// target, with the same store calls (mergequeue/states.go and land.go):
// the request's record and queued event in one write; a candidate merge
// commit built on the target's head on a scratch branch; the target
// moved to the candidate by compare-and-swap with the record, now
// merged, and the request's merged event in the same write; the scratch
// branch deleted. It prints ACKEV once the request is queued and ACKLAND
// once the landing is durable.
func land(ctx context.Context, t *testing.T, s *versionstore.Store, print func(string, ...any), id, target, source string) {
	if source == target {
		return
	}
	req := "crash/queue/" + id
	ev, err := feedevent.QueueEvent(target, "crash", feedevent.QueueChange{Request: req, Source: source, To: "queued"})
	if err != nil {
		t.Error(err)
		return
	}
	if _, err := s.AppendEvent(ctx, ev, versionstore.Record{Key: req, Value: []byte("queued"), If: &versionstore.RecordCondition{Exists: false}}); err != nil {
		fmt.Fprintln(os.Stderr, "queue:", err)
		return
	}
	print("ACKEV %s", req)
	// Like the queue, build the candidate again when a commit moved the
	// target meanwhile.
	for attempt := range 5 {
		candidate, err := landOnce(ctx, s, req, id, attempt, target, source)
		if errors.Is(err, versionstore.ErrReferenceConflict) {
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "land:", err)
			return
		}
		print("ACKLAND %s %s %s", req, candidate, target)
		return
	}
}

// landOnce builds a candidate on the target's head and moves the target
// to it, with the request's merged record and event.
func landOnce(ctx context.Context, s *versionstore.Store, req, id string, attempt int, target, source string) (versionstore.Hash, error) {
	var none versionstore.Hash
	head, err := s.GetRef(target)
	if err != nil {
		return none, err
	}
	src, err := s.GetRef(source)
	if err != nil {
		return none, err
	}
	scratch := fmt.Sprintf("crash-candidate/%s-%d", id, attempt)
	if _, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: scratch, Type: versionstore.Branch, Target: head.Head, Principal: "queue"}); err != nil {
		return none, err
	}
	defer func() {
		r, err := s.GetRef(scratch)
		if err == nil {
			err = s.DeleteRef(ctx, versionstore.DeleteRefRequest{Name: scratch, Expected: r.Head, Principal: "queue"})
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "scratch:", err)
		}
	}()
	res, err := s.Merge(ctx, versionstore.MergeRequest{Target: scratch, ExpectedTarget: head.Head, From: src.Head, FromRef: source, Committer: "queue",
		Meta: versionstore.CommitMeta{Message: "land " + req}})
	if err != nil {
		return none, fmt.Errorf("candidate: %w", err)
	}
	if !res.WasApplied {
		return none, fmt.Errorf("candidate: nothing to merge")
	}
	candidate := res.ResultantHash
	done, err := feedevent.QueueEvent(target, "queue", feedevent.QueueChange{Request: req, Source: source, From: "queued", To: "merged", Commit: candidate.String()})
	if err != nil {
		return none, err
	}
	_, err = s.AssignRef(ctx, versionstore.AssignRefRequest{Name: target, Type: versionstore.Branch, Expected: head.Head, Target: candidate, Principal: "queue",
		Records: []versionstore.Record{{Key: req, Value: []byte("merged"), If: &versionstore.RecordCondition{Exists: true, Value: []byte("queued")}}},
		Events:  []versionstore.LogEvent{done}})
	return candidate, err
}
