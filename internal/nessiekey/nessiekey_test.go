package nessiekey

import "testing"

func TestEncodePath(t *testing.T) {
	for _, tc := range []struct {
		elements []string
		want     string
	}{
		{[]string{"a", "b", "c"}, "a.b.c"},
		{[]string{"foo", ".bar", "baz"}, ".foo.*.bar.baz"},
		{[]string{"a*b", "c/d"}, ".a**b.c*{d"},
		{[]string{`x\y`, "50%"}, ".x*}y.50*["},
		{[]string{"plain*star"}, "plain*star"},
	} {
		if got := EncodePath(tc.elements); got != tc.want {
			t.Errorf("EncodePath(%q) = %q, want %q", tc.elements, got, tc.want)
		}
	}
}
