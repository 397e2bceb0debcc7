package versionstore

import (
	"errors"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// TestPutEncodedTakesUnpersistedNodesOfRoundsInFlight: a round prepared
// while the previous one is being written may make a node that round made
// too. If the previous round does not persist it, this round must, or its
// tree would point at a node that is never written.
func TestPutEncodedTakesUnpersistedNodesOfRoundsInFlight(t *testing.T) {
	t.Parallel()
	s := openTestStore(t, Options{})
	leaf := func(k string) (*node, []byte, Hash) {
		n := newNode(0, [][]byte{[]byte(k)}, []Hash{hashOf([]byte(k))})
		data := encodeNode(n)
		return n, data, hashOf(data)
	}
	parent := newOverlay(s, nil)
	dropped, droppedData, droppedHash := leaf("dropped")
	kept, keptData, keptHash := leaf("kept")
	c := &Content{Type: Namespace}
	contentData := encodeContent(c)
	parent.putEncoded(droppedData, droppedHash, dropped)
	parent.putEncoded(keptData, keptHash, kept)
	contentHash := parent.put(contentData, c)
	parent.kept = map[Hash]bool{keptHash: true}
	parent.sealed = true

	child := newOverlay(s, parent)
	child.putEncoded(droppedData, droppedHash, dropped)
	child.putEncoded(keptData, keptHash, kept)
	child.put(contentData, c)
	if _, ok := child.objs[droppedHash]; !ok {
		t.Error("a node the round in flight does not persist was not taken into the next round")
	}
	if _, ok := child.objs[keptHash]; ok {
		t.Error("a node the round in flight persists was written again")
	}
	if _, ok := child.objs[contentHash]; ok {
		t.Error("content the round in flight persists was written again")
	}
}

// TestRebuildRejectsForeignTree: a commit whose operations, applied to its
// parent's tree, do not give the tree it names is reported as corrupt, not
// read as some other tree.
func TestRebuildRejectsForeignTree(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTestStore(t, Options{})
	head, err := s.GetRef(DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Commit(ctx, CommitRequest{Branch: DefaultBranch, Expected: head.Head, Committer: "test",
		Operations: []Operation{put(key("ns"), ns())}})
	if err != nil {
		t.Fatal(err)
	}
	parent := res.Commit
	forged := &Commit{
		Parents:    []Hash{parent.Hash},
		Tree:       hashOf([]byte("a tree nobody wrote")),
		Seq:        parent.Seq + 1,
		Committer:  "test",
		CommitTime: parent.CommitTime,
		Operations: []CommitOp{{Kind: OpDelete, Key: key("ns")}},
	}
	data := encodeCommit(forged)
	h := hashOf(data)
	if err := s.be.Apply(ctx, backend.Batch{Objects: []backend.Object{{ID: h, Data: data}}}); err != nil {
		t.Fatal(err)
	}
	_, err = s.GetContent(ctx, h, key("ns"))
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "give tree") {
		t.Fatalf("reading a commit with a foreign tree: %v, want ErrCorrupt", err)
	}
}
