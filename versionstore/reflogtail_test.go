package versionstore_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/backend"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// backwardsOnly hides a backend's forward log scan.
type backwardsOnly struct{ backend.Backend }

// TestRefLogAfter reads the reference log forwards from every entry, in
// pages of every size, over a backend that scans forwards and one that
// only reads backwards: both give the entries after the cursor, oldest
// first, as RefLog lists them newest first.
func TestRefLogAfter(t *testing.T) {
	t.Parallel()
	for _, forwards := range []bool{true, false} {
		t.Run(fmt.Sprint("forwards=", forwards), func(t *testing.T) {
			be, err := pebblebackend.Open(t.TempDir(), pebblebackend.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var b backend.Backend = be
			if !forwards {
				b = backwardsOnly{be}
			}
			s, err := versionstore.Open(t.Context(), b, versionstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			main, _ := s.GetRef("main")
			for i := range 300 {
				if _, err := s.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: fmt.Sprint("b", i), Type: versionstore.Branch, Target: main.Head}); err != nil {
					t.Fatal(err)
				}
			}
			all, _, err := s.RefLog(t.Context(), "", 1000, "")
			if err != nil {
				t.Fatal(err)
			}
			slices.Reverse(all)
			if last, err := s.LastRefLogSeq(t.Context()); err != nil || last != all[len(all)-1].Seq {
				t.Fatalf("LastRefLogSeq = %d, %v; want %d", last, err, all[len(all)-1].Seq)
			}
			for _, limit := range []int{1, 7, 256, 1000} {
				for _, start := range []int{0, 1, 150, 299, 301} {
					var after uint64
					if start > 0 {
						after = all[start-1].Seq
					}
					got, err := s.RefLogAfter(t.Context(), after, limit)
					if err != nil {
						t.Fatal(err)
					}
					want := all[start:min(start+limit, len(all))]
					if !slices.EqualFunc(got, want, func(a, b *versionstore.RefLogEntry) bool { return a.Seq == b.Seq && a.Ref == b.Ref }) {
						t.Fatalf("after %d limit %d: %d entries, want %d", after, limit, len(got), len(want))
					}
				}
			}
		})
	}
}
