package mergecheck

import (
	"slices"
	"testing"
)

// The external checks a candidate gets: what it requires (known or not,
// built-in names aside), then those that always run, each once.
func TestExternalFor(t *testing.T) {
	v, err := New(Options{Store: nopStore{}, External: []ExternalCheck{
		{Name: "dq", URL: "http://x", Secret: "s"},
		{Name: "audit", URL: "http://x", Secret: "s", Always: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ required, want []string }{
		{nil, []string{"audit"}},
		{[]string{"dq"}, []string{"dq", "audit"}},
		{[]string{"lineage", "sla", "audit", "dq", "sla"}, []string{"sla", "audit", "dq"}},
	} {
		if got := v.externalFor(Candidate{RequiredChecks: tc.required}); !slices.Equal(got, tc.want) {
			t.Errorf("required %v: %v, want %v", tc.required, got, tc.want)
		}
	}
}
