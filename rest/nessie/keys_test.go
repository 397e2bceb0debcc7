package nessie

import (
	"slices"
	"testing"

	"github.com/floe-catalog/floe/versionstore"
)

func TestKeyPathEncodings(t *testing.T) {
	for _, tc := range []struct {
		key     versionstore.ContentKey
		escaped string // spec 2.2.0, what encodeKeyPath writes
		legacy  string
	}{
		{versionstore.ContentKey{"a"}, "a", "a"},
		{versionstore.ContentKey{"db", "t"}, "db.t", "db.t"},
		{versionstore.ContentKey{"foo", ".bar", "baz"}, ".foo.*.bar.baz", "foo.\x1dbar.baz"},
		{versionstore.ContentKey{"a/b", `c\d`, "e%f", "g*h"}, `.a*{b.c*}d.e*[f.g**h`, "a/b.c\\d.e%f.g*h"},
		{versionstore.ContentKey{"x*y"}, "x*y", "x*y"},
		{versionstore.ContentKey{"ünï", "cödé"}, "ünï.cödé", "ünï.cödé"},
	} {
		t.Run(tc.key.String(), func(t *testing.T) {
			if got := encodeKeyPath(tc.key); got != tc.escaped {
				t.Errorf("encodeKeyPath = %q, want %q", got, tc.escaped)
			}
			if got := encodeKeyLegacy(tc.key); got != tc.legacy {
				t.Errorf("encodeKeyLegacy = %q, want %q", got, tc.legacy)
			}
			for _, enc := range []string{tc.escaped, tc.legacy} {
				got, err := decodeKeyPath(enc)
				if err != nil {
					t.Fatalf("decodeKeyPath(%q): %v", enc, err)
				}
				if !slices.Equal(got, tc.key) {
					t.Errorf("decodeKeyPath(%q) = %q, want %q", enc, got, tc.key)
				}
			}
		})
	}
}

func TestKeyPathDecodeErrors(t *testing.T) {
	for _, bad := range []string{"", ".", "a..b", ".a*", ".a*x", "a.", ".a.."} {
		if k, err := decodeKeyPath(bad); err == nil {
			t.Errorf("decodeKeyPath(%q) = %q, want an error", bad, k)
		}
	}
}

func FuzzKeyPath(f *testing.F) {
	f.Add("a", "b.c")
	f.Add("*", "%/\\")
	f.Fuzz(func(t *testing.T, a, b string) {
		k := versionstore.ContentKey{a, b}
		if k.Validate() != nil {
			return
		}
		got, err := decodeKeyPath(encodeKeyPath(k))
		if err != nil || !slices.Equal(got, k) {
			t.Fatalf("round trip of %q: %q, %v", k, got, err)
		}
	})
}
