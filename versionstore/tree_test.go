package versionstore

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// memNodes is a node store over a map, for testing the tree algorithms in
// isolation from any backend.
type memNodes struct{ m map[Hash]*node }

func (s *memNodes) node(_ context.Context, h Hash) (*node, error) {
	n, ok := s.m[h]
	if !ok {
		return nil, fmt.Errorf("no node %s", h)
	}
	return n, nil
}

func (s *memNodes) putNode(n *node) Hash {
	data := encodeNode(n)
	h := hashOf(data)
	// Round-trip through the codec so tests cover it.
	d, err := decodeNode(data)
	if err != nil {
		panic(err)
	}
	s.m[h] = d
	return h
}

func valueFor(i int) Hash { return hashOf([]byte(fmt.Sprint("v", i))) }

// buildFromScratch builds the canonical tree of a key set.
func buildFromScratch(ns *memNodes, entries map[string]Hash) Hash {
	keys := slices.Sorted(maps.Keys(entries))
	muts := make([]mutation, len(keys))
	for i, k := range keys {
		muts[i] = mutation{key: []byte(k), value: entries[k]}
	}
	return buildUp(ns, 0, muts)
}

func randomKey(r *rand.Rand) string {
	ns := []string{"a", "b", "sales", "sales\x00eu", "z"}
	return fmt.Sprintf("%s\x00t%05d", ns[r.IntN(len(ns))], r.IntN(3000))
}

// TestTreeEditMatchesRebuild checks history independence: after any
// sequence of batched edits the root equals the tree built from scratch
// from the same key set, and lookups, range scans and diffs agree with a
// plain map.
func TestTreeEditMatchesRebuild(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for seed := uint64(0); seed < 20; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		ns := &memNodes{m: map[Hash]*node{}}
		model := map[string]Hash{}
		root := emptyTree
		for step := 0; step < 50; step++ {
			prevRoot, prevModel := root, maps.Clone(model)
			batch := map[string]mutation{}
			n := 1 + r.IntN(1+r.IntN(400))
			for i := 0; i < n; i++ {
				k := randomKey(r)
				if r.IntN(3) == 0 {
					batch[k] = mutation{key: []byte(k), del: true}
					delete(model, k)
				} else {
					v := valueFor(r.IntN(1 << 20))
					batch[k] = mutation{key: []byte(k), value: v}
					model[k] = v
				}
			}
			muts := sortedMutations(batch)
			var err error
			root, err = editTree(ctx, ns, root, muts)
			if err != nil {
				t.Fatal(err)
			}
			if want := buildFromScratch(ns, model); root != want {
				t.Fatalf("seed %d step %d: edited root %s != rebuilt root %s (%d keys)", seed, step, root, want, len(model))
			}
			checkTree(t, ns, root, model)
			checkDiff(t, ns, prevRoot, root, prevModel, model)
		}
	}
}

func checkTree(t *testing.T, ns *memNodes, root Hash, model map[string]Hash) {
	t.Helper()
	ctx := t.Context()
	var got []string
	err := scanRange(ctx, ns, root, nil, nil, func(k []byte, v Hash) bool {
		if model[string(k)] != v {
			t.Fatalf("scan: key %q value mismatch", k)
		}
		got = append(got, string(k))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := slices.Sorted(maps.Keys(model)); !slices.Equal(got, want) {
		t.Fatalf("scan returned %d keys, model has %d", len(got), len(want))
	}
	for k, v := range model {
		got, ok, err := lookup(ctx, ns, root, []byte(k))
		if err != nil || !ok || got != v {
			t.Fatalf("lookup %q: ok=%v err=%v", k, ok, err)
		}
	}
	if _, ok, _ := lookup(ctx, ns, root, []byte("missing")); ok {
		t.Fatal("lookup of a missing key succeeded")
	}
	// A bounded scan returns exactly the keys in range.
	lo, hi := []byte("b"), []byte("sales\x00eu\x01")
	var want []string
	for _, k := range slices.Sorted(maps.Keys(model)) {
		if bytes.Compare([]byte(k), lo) >= 0 && bytes.Compare([]byte(k), hi) < 0 {
			want = append(want, k)
		}
	}
	got = got[:0]
	if err := scanRange(ctx, ns, root, lo, hi, func(k []byte, _ Hash) bool { got = append(got, string(k)); return true }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("bounded scan: got %d keys, want %d", len(got), len(want))
	}
}

func checkDiff(t *testing.T, ns *memNodes, a, b Hash, ma, mb map[string]Hash) {
	t.Helper()
	var want []string
	for k, v := range ma {
		if w, ok := mb[k]; !ok || w != v {
			want = append(want, k)
		}
	}
	for k := range mb {
		if _, ok := ma[k]; !ok {
			want = append(want, k)
		}
	}
	slices.Sort(want)
	var got []string
	err := diffTrees(t.Context(), ns, a, b, nil, nil, func(k []byte, av Hash, aok bool, bv Hash, bok bool) bool {
		wa, wok := ma[string(k)]
		wb, wbok := mb[string(k)]
		if aok != wok || bok != wbok || (aok && av != wa) || (bok && bv != wb) {
			t.Fatalf("diff entry %q does not match the models", k)
		}
		got = append(got, string(k))
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("diff: got %d keys, want %d", len(got), len(want))
	}
}

// TestDiffSkipsEqualSubtrees checks that a diff of two large trees that
// differ in a few keys reads only a few nodes.
func TestDiffSkipsEqualSubtrees(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := &memNodes{m: map[Hash]*node{}}
	model := map[string]Hash{}
	for i := 0; i < 50000; i++ {
		model[fmt.Sprintf("ns\x00t%07d", i)] = valueFor(i)
	}
	a := buildFromScratch(ns, model)
	muts := []mutation{{key: []byte("ns\x00t0001000"), value: valueFor(-1)}, {key: []byte("ns\x00t0040000"), del: true}}
	b, err := editTree(ctx, ns, a, muts)
	if err != nil {
		t.Fatal(err)
	}
	counter := &countingNodes{memNodes: ns}
	var n int
	if err := diffTrees(ctx, counter, a, b, nil, nil, func([]byte, Hash, bool, Hash, bool) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("diff found %d keys, want 2", n)
	}
	if counter.reads > 20 {
		t.Fatalf("diff read %d nodes of a %d-node tree; equal subtrees were not skipped", counter.reads, len(ns.m))
	}
}

type countingNodes struct {
	*memNodes
	reads int
}

func (c *countingNodes) node(ctx context.Context, h Hash) (*node, error) {
	c.reads++
	return c.memNodes.node(ctx, h)
}

func TestKeyLevelDistribution(t *testing.T) {
	t.Parallel()
	counts := make([]int, 4)
	for i := 0; i < 1<<16; i++ {
		if l := keyLevel([]byte(fmt.Sprint("key", i))); l < len(counts) {
			counts[l]++
		}
	}
	// Level >= 1 should be about 2^-levelBits of keys.
	above, want := (1<<16)-counts[0], (1<<16)>>levelBits
	if above < want*3/4 || above > want*5/4 {
		t.Fatalf("%d of 65536 keys are boundaries, want about %d", above, want)
	}
}
