package versionstore

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestWriteCheck: a merge or transplant shows its check exactly the
// changes it would write on the target, and a refusal writes nothing, dry
// run or not.
func TestWriteCheck(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTestStore(t, Options{})
	base := mustCommit(t, s, "main", put(key("db"), ns()), put(key("db", "a"), table("a1")), put(key("db", "gone"), table("g1")))
	if _, err := s.CreateRef(ctx, CreateRefRequest{Name: "dev", Type: Branch, Target: base.Commit.Hash}); err != nil {
		t.Fatal(err)
	}
	a, _ := s.GetContent(ctx, base.Commit.Hash, key("db", "a"))
	a2 := table("a2")
	a2.ID = a.ID
	d1 := mustCommit(t, s, "dev", put(key("db", "a"), a2), put(key("db", "new"), table("n1")))
	d2 := mustCommit(t, s, "dev", del(key("db", "gone")))
	n, _ := s.GetContent(ctx, d1.Commit.Hash, key("db", "new"))
	n2 := table("n2")
	n2.ID = n.ID
	d3 := mustCommit(t, s, "dev", put(key("db", "new"), n2))

	type seen struct {
		key           string
		kind          OperationKind
		before, after string // metadata locations, "-" for none
	}
	loc := func(c *Content) string {
		if c == nil {
			return "-"
		}
		return c.MetadataLocation
	}
	want := []seen{
		{"db.a", OpPut, "a1", "a2"},
		{"db.gone", OpDelete, "g1", "-"},
		{"db.new", OpPut, "-", "n2"}, // one change per key: its last value
	}
	errDenied := errors.New("denied")
	recorder := func(got *[]seen, verdict error) WriteCheck {
		return func(_ context.Context, changes []CheckedChange) error {
			*got = nil
			for _, c := range changes {
				*got = append(*got, seen{c.Key.String(), c.Kind, loc(c.Before), loc(c.After)})
			}
			slices.SortFunc(*got, func(x, y seen) int {
				if x.key < y.key {
					return -1
				}
				return 1
			})
			return verdict
		}
	}
	mainHead := head(t, s, "main")
	runs := []struct {
		name string
		run  func(WriteCheck, bool) error
	}{
		{"merge", func(c WriteCheck, dry bool) error {
			_, err := s.Merge(ctx, MergeRequest{Target: "main", ExpectedTarget: mainHead, From: d3.Commit.Hash, DryRun: dry, Check: c})
			return err
		}},
		{"transplant", func(c WriteCheck, dry bool) error {
			_, err := s.Transplant(ctx, TransplantRequest{Target: "main", ExpectedTarget: mainHead,
				Commits: []Hash{d1.Commit.Hash, d2.Commit.Hash, d3.Commit.Hash}, DryRun: dry, Check: c})
			return err
		}},
	}
	for _, r := range runs {
		for _, dry := range []bool{true, false} {
			var got []seen
			if err := r.run(recorder(&got, errDenied), dry); !errors.Is(err, errDenied) {
				t.Fatalf("%s (dry run %v) with a refusing check: %v, want the check's error", r.name, dry, err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s (dry run %v) checked %v, want %v", r.name, dry, got, want)
			}
			if h := head(t, s, "main"); h != mainHead {
				t.Fatalf("%s (dry run %v) refused, yet main moved to %s", r.name, dry, h)
			}
		}
	}
	var got []seen
	if err := runs[0].run(recorder(&got, nil), false); err != nil {
		t.Fatalf("approved merge: %v", err)
	}
	if head(t, s, "main") == mainHead || !slices.Equal(got, want) {
		t.Fatalf("approved merge: main did not move, or checked %v", got)
	}
}
