package versionstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/floe-catalog/floe/versionstore/backend"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// multiBackend is a shared view of a Pebble backend that reads many objects
// at once, counting tree nodes read one at a time and batched reads.
type multiBackend struct {
	backend.Backend
	nodeReads  atomic.Int64 // GetObject calls that returned a tree node
	multiReads atomic.Int64 // GetObjects calls
}

func (*multiBackend) Shared() bool { return true }
func (*multiBackend) Close() error { return nil }

func (m *multiBackend) GetObject(ctx context.Context, id backend.ObjectID) ([]byte, error) {
	data, err := m.Backend.GetObject(ctx, id)
	if err == nil && len(data) > 0 && data[0] == kindNode {
		m.nodeReads.Add(1)
	}
	return data, err
}

func (m *multiBackend) GetObjects(ctx context.Context, ids []backend.ObjectID) ([][]byte, error) {
	m.multiReads.Add(1)
	out := make([][]byte, len(ids))
	for i, id := range ids {
		data, err := m.Backend.GetObject(ctx, id)
		switch {
		case err == nil:
			out[i] = data
		case !errors.Is(err, backend.ErrObjectNotFound):
			return nil, err
		}
	}
	return out, nil
}

// bigTree fills main with n tables under one namespace, in commits of 500,
// and returns the store (which owns be).
func bigTree(t *testing.T, be backend.Backend, n int) *Store {
	t.Helper()
	s, err := Open(t.Context(), be, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	head, _ := s.GetRef(DefaultBranch)
	res, err := commitAt(t, s, DefaultBranch, head.Head, put(key("ns"), ns()))
	if err != nil {
		t.Fatal(err)
	}
	at := res.Commit.Hash
	for i := 0; i < n; i += 500 {
		var ops []Operation
		for j := i; j < min(n, i+500); j++ {
			ops = append(ops, put(key("ns", fmt.Sprintf("t%06d", j)), table(fmt.Sprintf("file:///w/t%d", j))))
		}
		res, err := commitAt(t, s, DefaultBranch, at, ops...)
		if err != nil {
			t.Fatal(err)
		}
		at = res.Commit.Hash
	}
	return s
}

// treeHeight is the number of levels of the tree at root.
func treeHeight(t *testing.T, s *Store, root Hash) int {
	t.Helper()
	n, err := s.node(t.Context(), root)
	if err != nil {
		t.Fatal(err)
	}
	return n.level + 1
}

// TestPrefetchReadsOneLevelPerRoundTrip: a replica whose cache holds none of
// the tree another wrote reads the nodes its commit looks up one tree level
// per backend call, and none one at a time.
func TestPrefetchReadsOneLevelPerRoundTrip(t *testing.T) {
	t.Parallel()
	pebble, err := pebblebackend.Open(t.TempDir(), pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pebble.Close() })
	writer := bigTree(t, sharedBackend{pebble}, 5000)
	head, _ := writer.GetRef(DefaultBranch)
	c, err := writer.commit(t.Context(), head.Head)
	if err != nil {
		t.Fatal(err)
	}
	height := treeHeight(t, writer, c.Tree)
	if height < 3 {
		t.Fatalf("tree of %d levels; the test needs a deeper one", height)
	}

	mb := &multiBackend{Backend: pebble}
	reader, err := Open(t.Context(), mb, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reader.Close() })
	if reader.multi == nil {
		t.Fatal("a store on a shared backend that reads many objects does not use it")
	}
	mb.nodeReads.Store(0)
	if _, err := commitAt(t, reader, DefaultBranch, head.Head,
		put(key("ns", "t002500x"), table("file:///w/new")), put(key("ns", "t999999"), table("file:///w/last"))); err != nil {
		t.Fatal(err)
	}
	if n := mb.nodeReads.Load(); n != 0 {
		t.Errorf("%d tree nodes read one at a time, want 0", n)
	}
	if n := mb.multiReads.Load(); n != int64(height) {
		t.Errorf("%d batched reads for a tree of %d levels, want one per level", n, height)
	}
}

// TestHintCarriesHeadAndUpperNodes: a round's hint holds its head commit
// and the inner nodes it made, top down, within the bound; a store that
// adopts it then reads the head and the upper tree without the backend,
// and a damaged hint is ignored from the damage on.
func TestHintCarriesHeadAndUpperNodes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pebble, err := pebblebackend.Open(t.TempDir(), pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pebble.Close() })
	s := bigTree(t, sharedBackend{pebble}, 5000)

	// A round in memory, as the committer builds one.
	base := s.refs.get(DefaultBranch)
	q := &refQueue{}
	p := s.prepareRound(DefaultBranch, q, base, nil)
	req := CommitRequest{Branch: DefaultBranch, Expected: base.Head, Committer: "tester",
		Operations: []Operation{put(key("ns", "t001234x"), table("file:///w/x"))}}
	puts := preparePuts(req.Operations)
	w := &writeRequest{ctx: ctx, done: make(chan struct{}), apply: func(ctx context.Context, t *refTxn) (any, error) {
		return t.commit(ctx, req, puts, nil)
	}}
	p.add([]*writeRequest{w})
	if w.err != nil {
		t.Fatal(w.err)
	}
	hint := p.hint()
	if len(hint) == 0 || len(hint) > maxHintBytes {
		t.Fatalf("hint of %d bytes, want 1 to %d", len(hint), maxHintBytes)
	}
	head := p.cur.Head
	headCommit, err := p.ov.commit(ctx, head)
	if err != nil {
		t.Fatal(err)
	}

	// Another replica, with a cold cache and no access to the round's
	// objects (they were never written), adopts it.
	other, err := Open(ctx, sharedBackend{pebble}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = other.Close() })
	other.adoptHint(hint)
	v, ok := other.cache.get(head)
	if c, isCommit := v.(*Commit); !ok || !isCommit || c.Hash != head || c.Tree != headCommit.Tree {
		t.Fatalf("head commit not adopted from the hint: %v", v)
	}
	if n := other.cachedNode(nil, headCommit.Tree); n == nil || n.level == 0 {
		t.Fatalf("root of the head's tree not adopted: %v", n)
	}

	// Truncated anywhere, or with a byte flipped, a hint is used up to
	// the damage and never makes the store panic or believe a wrong
	// object: the head commit is adopted only if its bytes are whole.
	n, k := binary.Uvarint(hint)
	firstEnd := k + int(n)
	for cut := range len(hint) {
		fresh, err := Open(ctx, sharedBackend{pebble}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		damaged := append([]byte(nil), hint[:cut]...)
		flipped := -1
		if cut%7 == 3 {
			flipped = cut / 2
			damaged[flipped] ^= 0x5a
		}
		fresh.adoptHint(damaged)
		_, got := fresh.cache.get(head)
		want := cut >= firstEnd && (flipped < 0 || flipped >= firstEnd)
		if got != want {
			t.Errorf("cut at %d, flipped byte %d: head commit adopted %v, want %v", cut, flipped, got, want)
		}
		_ = fresh.Close()
	}
}

// TestHeadChainFollow: the chain is carried from one head to another only
// through a contiguous run of this ref's descent moves in the log.
func TestHeadChainFollow(t *testing.T) {
	t.Parallel()
	h := func(i int) Hash { return hashOf(fmt.Appendf(nil, "commit %d", i)) }
	ref := func(i int) *Ref { return (&Ref{Name: "main", Type: Branch, Head: h(i)}).withRaw() }
	entry := func(name string, op RefLogOp, from, to int) backend.LogRecord {
		return backend.LogRecord{Value: encodeRefLog(&RefLogEntry{Ref: name, RefType: Branch, Op: op, From: h(from), To: h(to)})}
	}
	newest := func(recs ...backend.LogRecord) []backend.LogRecord { // given oldest first
		out := make([]backend.LogRecord, len(recs))
		for i, r := range recs {
			out[len(recs)-1-i] = r
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		from   int
		to     int
		log    []backend.LogRecord
		follow bool
	}{
		{"commits by another replica", 1, 4, newest(entry("main", RefLogCommit, 0, 1), entry("main", RefLogCommit, 1, 2), entry("main", RefLogMerge, 2, 3), entry("main", RefLogTransplant, 3, 4)), true},
		{"other refs interleaved", 1, 3, newest(entry("main", RefLogCommit, 1, 2), entry("dev", RefLogCommit, 7, 8), entry("main", RefLogCommit, 2, 3)), true},
		{"a gap", 1, 3, newest(entry("main", RefLogCommit, 2, 3)), false},
		{"a reset on the way", 1, 3, newest(entry("main", RefLogCommit, 1, 2), entry("main", RefLogAssign, 2, 3)), false},
		{"the log is too short", 1, 3, newest(entry("main", RefLogCommit, 2, 3)), false},
		{"a damaged record", 1, 2, []backend.LogRecord{{Value: []byte("junk")}}, false},
		{"the same head", 1, 1, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c headChain
			c.reset(ref(0))
			c.add(h(1))
			got := c.follow("main", ref(tc.from), ref(tc.to), tc.log)
			if got != tc.follow {
				t.Fatalf("follow = %v, want %v", got, tc.follow)
			}
			if !got {
				return
			}
			for i := 0; i <= tc.to; i++ {
				if !c.has(h(i)) {
					t.Errorf("commit %d no longer in the chain", i)
				}
			}
		})
	}
	var c headChain
	c.reset(ref(5))
	if c.follow("main", ref(1), ref(2), newest(entry("main", RefLogCommit, 1, 2))) {
		t.Error("followed from a head the chain does not hold")
	}
	// Heads of a round that lost its compare-and-swap were remembered
	// after the last durable head: they are not ancestors of the new one.
	c.reset(ref(1))
	c.add(h(100))
	c.add(h(101))
	if !c.follow("main", ref(1), ref(2), newest(entry("main", RefLogCommit, 1, 2))) {
		t.Fatal("did not follow")
	}
	if c.has(h(100)) || c.has(h(101)) {
		t.Error("heads that never became durable kept in the chain")
	}
	if !c.has(h(1)) || !c.has(h(2)) {
		t.Error("durable heads dropped from the chain")
	}
}
