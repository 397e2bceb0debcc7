package policy

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// TestOnActivate: every activation is told, with its source and the
// revision it replaced; a refused bundle is not.
func TestOnActivate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeBundleDir(t, dir, "r1", revisionPolicy("r1"))
	var mu sync.Mutex
	var got []Activation
	e, err := New(t.Context(), Options{Bundle: dir, PollInterval: -1, OnActivate: func(_ context.Context, a Activation) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, a)
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	writeBundleDir(t, dir, "r2", brokenPolicy)
	if err := e.Reload(t.Context()); err == nil {
		t.Fatal("a broken bundle was activated")
	}
	writeBundleDir(t, dir, "r3", revisionPolicy("r3"))
	if err := e.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	want := []Activation{{Source: dir, Revision: "r1"}, {Source: dir, Revision: "r3", PreviousRevision: "r1"}}
	if !slices.Equal(got, want) {
		t.Fatalf("activations %+v, want %+v", got, want)
	}
}
