package policy

import (
	"testing"
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
	ran := runRegoTests(t, b)
	if ran < minRegoTests {
		t.Errorf("ran %d rego tests, want at least %d", ran, minRegoTests)
	}
	t.Logf("ran %d rego tests", ran)
}
