package policy

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// minRegoTests guards against the Rego tests silently not running (a
// renamed package, a parse change): the default bundle has at least this
// many test rules.
const minRegoTests = 50

func TestDefaultBundleRegoTests(t *testing.T) {
	b, err := DefaultBundle()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	store := inmem.NewWithOpts(inmem.OptRoundTripOnWrite(false))
	txn, err := store.NewTransaction(ctx, storage.WriteParams)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Abort(ctx, txn)

	ch, err := tester.NewRunner().
		SetStore(store).
		SetBundles(map[string]*bundle.Bundle{"floe": b}).
		RunTests(ctx, txn)
	if err != nil {
		t.Fatalf("run rego tests: %v", err)
	}
	ran, failed := 0, 0
	for r := range ch {
		ran++
		if !r.Pass() {
			failed++
			t.Errorf("rego test %s.%s failed: fail=%v err=%v", r.Package, r.Name, r.Fail, r.Error)
		}
	}
	if ran < minRegoTests {
		t.Errorf("ran %d rego tests, want at least %d", ran, minRegoTests)
	}
	t.Logf("ran %d rego tests, %d failed", ran, failed)
}
