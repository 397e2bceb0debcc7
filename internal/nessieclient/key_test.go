package nessieclient

import (
	"slices"
	"testing"
)

func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		in       string
		elements []string
		path     string
	}{
		{"t", []string{"t"}, "t"},
		{"ns.sub.table", []string{"ns", "sub", "table"}, "ns.sub.table"},
		{`ns.a\.b`, []string{"ns", "a.b"}, ".ns.a*.b"},
		{`ns.a/b*c`, []string{"ns", "a/b*c"}, ".ns.a*{b**c"},
		{`ns.x\\y%`, []string{"ns", `x\y%`}, ".ns.x*}y*["},
	} {
		t.Run(tc.in, func(t *testing.T) {
			k, err := ParseKey(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(k.Elements, tc.elements) {
				t.Errorf("ParseKey(%q) = %q, want %q", tc.in, k.Elements, tc.elements)
			}
			if got := k.PathForm(); got != tc.path {
				t.Errorf("PathForm = %q, want %q", got, tc.path)
			}
			if got := k.String(); got != tc.in {
				t.Errorf("String = %q, want %q", got, tc.in)
			}
		})
	}
	for _, bad := range []string{"", "a..b", ".a", "a.", `a\`} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) succeeded, want an error", bad)
		}
	}
}
