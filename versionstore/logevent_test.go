package versionstore

import (
	"errors"
	"testing"
)

// TestAppendEvent: an event and its records are one durable write. A
// record whose condition fails leaves neither the record nor the event;
// one that holds leaves both, the event in the log's order after the
// moves before it, readable again after a reopen, and never listed by
// RefLog, which lists moves.
func TestAppendEvent(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	s := openStoreAt(t, dir, Options{})
	if _, err := s.Commit(ctx, CommitRequest{Branch: DefaultBranch, Expected: head(t, s, DefaultBranch),
		Operations: []Operation{put(key("db"), ns())}}); err != nil {
		t.Fatal(err)
	}

	// A failed condition: nothing is written.
	_, err := s.AppendEvent(ctx, LogEvent{Kind: "queue", Subject: DefaultBranch, Principal: "alice", Payload: []byte(`{"state":"queued"}`)},
		Record{Key: "q/1", Value: []byte("queued"), If: &RecordCondition{Exists: true, Value: []byte("nothing")}})
	if !errors.Is(err, ErrRecordConflict) {
		t.Fatalf("append with a failing condition: %v, want ErrRecordConflict", err)
	}
	before, err := s.RefLogAfter(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range before {
		if e.Op == RefLogEvent {
			t.Fatalf("a refused event is in the log: %+v", e)
		}
	}
	if _, err := s.GetRecord(ctx, "q/1"); !errors.Is(err, ErrRecordNotFound) {
		t.Fatalf("the refused event's record: %v, want not found", err)
	}

	// A holding condition: the record and the event.
	if _, err := s.AppendEvent(ctx, LogEvent{Kind: "queue", Subject: DefaultBranch, Principal: "alice", Payload: []byte(`{"state":"queued"}`)},
		Record{Key: "q/1", Value: []byte("queued"), If: &RecordCondition{Exists: false}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvent(ctx, LogEvent{Kind: "gc", Payload: []byte(`{"deleted":3}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendEvent(ctx, LogEvent{Kind: ""}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("an event without a kind: %v, want ErrInvalid", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStoreAt(t, dir, Options{})
	if r, err := s.GetRecord(ctx, "q/1"); err != nil || string(r.Value) != "queued" {
		t.Fatalf("record after reopen: %v %v", r, err)
	}
	entries, err := s.RefLogAfter(ctx, before[len(before)-1].Seq, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("entries after the moves: %d, want the 2 events", len(entries))
	}
	want := []struct{ kind, subject, payload, principal string }{
		{"queue", DefaultBranch, `{"state":"queued"}`, "alice"},
		{"gc", "", `{"deleted":3}`, ""},
	}
	for i, e := range entries {
		if e.Op != RefLogEvent || e.Ref != want[i].subject || e.Principal != want[i].principal || e.Time.IsZero() {
			t.Fatalf("entry %d: %+v", i, e)
		}
		kind, payload, err := s.ReadLogEvent(ctx, e)
		if err != nil || kind != want[i].kind || string(payload) != want[i].payload {
			t.Fatalf("event %d: %q %q %v, want %q %q", i, kind, payload, err, want[i].kind, want[i].payload)
		}
	}
	moves, _, err := s.RefLog(ctx, "", 100, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range moves {
		if m.Op == RefLogEvent {
			t.Fatalf("RefLog lists an event: %+v", m)
		}
	}
	if len(moves) != len(before) {
		t.Fatalf("RefLog lists %d moves, want %d", len(moves), len(before))
	}
	if _, _, err := s.ReadLogEvent(ctx, moves[0]); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ReadLogEvent of a move: %v, want ErrInvalid", err)
	}
}

// TestAssignRefWithEvents: events ride on an assignment, right after its
// move, and exist only if the reference moved.
func TestAssignRefWithEvents(t *testing.T) {
	ctx := t.Context()
	s := openTestStore(t, Options{})
	root := head(t, s, DefaultBranch)
	res, err := s.Commit(ctx, CommitRequest{Branch: DefaultBranch, Expected: root, Operations: []Operation{put(key("db"), ns())}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRef(ctx, CreateRefRequest{Name: "dev", Type: Branch, Target: root}); err != nil {
		t.Fatal(err)
	}
	evs := []LogEvent{{Kind: "queue", Subject: "dev", Payload: []byte(`1`)}, {Kind: "queue", Subject: "dev", Payload: []byte(`2`)}}
	// Expecting the wrong head: no move, no event.
	if _, err := s.AssignRef(ctx, AssignRefRequest{Name: "dev", Expected: res.Commit.Hash, Target: res.Commit.Hash, Events: evs}); err == nil {
		t.Fatal("an assignment from the wrong head succeeded")
	}
	last, err := s.LastRefLogSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AssignRef(ctx, AssignRefRequest{Name: "dev", Expected: root, Target: res.Commit.Hash, Principal: "q", Events: evs}); err != nil {
		t.Fatal(err)
	}
	entries, err := s.RefLogAfter(ctx, last, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 || entries[0].Op != RefLogAssign || entries[1].Op != RefLogEvent || entries[2].Op != RefLogEvent {
		t.Fatalf("entries after the refused assignment: %+v; want the move and its 2 events", entries)
	}
	for i, e := range entries[1:] {
		if _, payload, err := s.ReadLogEvent(ctx, e); err != nil || string(payload) != string(evs[i].Payload) {
			t.Fatalf("event %d: %q %v", i, payload, err)
		}
	}
	// Several events in one write keep their order.
	if _, err := s.AppendEvents(ctx, []LogEvent{{Kind: "a"}, {Kind: "b"}}); err != nil {
		t.Fatal(err)
	}
	more, err := s.RefLogAfter(ctx, entries[2].Seq, 10)
	if err != nil || len(more) != 2 {
		t.Fatalf("after the appended pair: %d entries, %v", len(more), err)
	}
	for i, want := range []string{"a", "b"} {
		if kind, _, err := s.ReadLogEvent(ctx, more[i]); err != nil || kind != want {
			t.Fatalf("event %d: %q %v, want %q", i, kind, err, want)
		}
	}
}
