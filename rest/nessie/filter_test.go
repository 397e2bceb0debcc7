package nessie

import (
	"strings"
	"testing"
)

func TestFilter(t *testing.T) {
	vars := filterVars{"ref": "etl/daily", "refType": "BRANCH", "entry.namespace": "a.b", "n": int64(3)}
	for _, tc := range []struct {
		expr string
		want bool
	}{
		{"", true},
		{"ref == 'etl/daily'", true},
		{`ref != "etl/daily"`, false},
		{"refType == 'TAG' || ref.startsWith('etl/')", true},
		{"refType == 'BRANCH' && ref.endsWith('daily') && ref.contains('/')", true},
		{"ref.matches('^etl/[a-z]+$')", true},
		{"!(ref.matches('^x'))", true},
		{"refType in ['TAG', 'BRANCH']", true},
		{"entry.namespace.startsWith('a') && n > 2 && n <= 3", true},
		{"(refType == 'TAG' || refType == 'BRANCH') && !(ref == 'main')", true},
		{"ref < 'f' && ref >= 'etl'", true},
		{"false || true && false", false},
	} {
		f, err := compileFilter(tc.expr)
		if err != nil {
			t.Fatalf("compile %q: %v", tc.expr, err)
		}
		got, err := f.match(vars)
		if err != nil {
			t.Fatalf("eval %q: %v", tc.expr, err)
		}
		if got != tc.want {
			t.Errorf("%q = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

func TestFilterErrors(t *testing.T) {
	vars := filterVars{"ref": "main"}
	for _, expr := range []string{
		"ref ==", "ref == 'x", "ref.matches('(')", "ref.exec('x')", "ref.matches(ref)",
		"(((ref == 'x')", "ref == 'x' )", "ref $ 'x'", strings.Repeat("(", 100) + "true" + strings.Repeat(")", 100),
		strings.Repeat("x", maxFilterBytes+1),
	} {
		if _, err := compileFilter(expr); err == nil {
			t.Errorf("compile %q: want an error", expr)
		}
	}
	for _, expr := range []string{"unknown == 'x'", "ref", "ref.startsWith(1)", "ref < 1", "ref in 'x'"} {
		f, err := compileFilter(expr)
		if err != nil {
			t.Fatalf("compile %q: %v", expr, err)
		}
		if _, err := f.match(vars); err == nil {
			t.Errorf("eval %q: want an error", expr)
		}
	}
}

func FuzzFilter(f *testing.F) {
	f.Add("ref == 'main' && refType.startsWith('B')")
	f.Add("!(a in [1, 'x']) || b.matches('.*')")
	f.Fuzz(func(t *testing.T, expr string) {
		flt, err := compileFilter(expr)
		if err != nil {
			return
		}
		_, _ = flt.match(filterVars{"ref": "main", "refType": "BRANCH"})
	})
}
