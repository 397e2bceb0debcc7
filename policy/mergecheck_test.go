package policy

import (
	"path/filepath"
	"slices"
	"testing"
)

func TestCheckMerge(t *testing.T) {
	e := newTestEngine(t, Options{})
	dropped := []byte(`{"version": 1, "principal": "p", "target": {"ref": "main"},
		"tables": [{"name": "ns.t", "change": "dropped", "snapshots": [],
			"dataFiles": {"addedRecords": 0, "removedRecords": 0}, "deleteFiles": {"addedRecords": 0}}]}`)
	d, err := e.CheckMerge(t.Context(), dropped)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Defined || d.Allow || !slices.Equal(d.Reasons, []string{"table ns.t is dropped on main, which only [] may do"}) {
		t.Fatalf("dropped table on main: %+v", d)
	}
	if d.Revision != "default-1" {
		t.Errorf("revision %q", d.Revision)
	}
	d, err = e.CheckMerge(t.Context(), []byte(`{"version": 1, "target": {"ref": "main"}, "tables": []}`))
	if err != nil || !d.Allow || !d.Defined {
		t.Fatalf("empty merge: %+v %v", d, err)
	}
	if _, err := e.CheckMerge(t.Context(), []byte(`{not json`)); err == nil {
		t.Fatal("a summary that is not JSON was accepted")
	}

	// A bundle without merge rules says nothing about merges.
	other := newTestEngine(t, Options{Bundle: filepath.Join(examplePolicies, "read-only-analysts")})
	d, err = other.CheckMerge(t.Context(), dropped)
	if err != nil || d.Defined || !d.Allow {
		t.Fatalf("bundle without merge rules: %+v %v", d, err)
	}
}
