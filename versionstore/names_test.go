package versionstore

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestHashLikeRefNames: a reference may not be named like a commit hash,
// and hash notation never resolves to a reference, even one an older store
// holds under such a name; that one stays reachable as "name@".
func TestHashLikeRefNames(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTestStore(t, Options{})
	c1 := mustCommit(t, s, "main", put(key("n"), ns()))
	c2 := mustCommit(t, s, "main", put(key("n", "t"), table("x")))
	h1, h2 := c1.Commit.Hash.String(), c2.Commit.Hash.String()

	// h2 may start with a digit, which no ref name may; these start with
	// a letter and are hex throughout.
	for _, name := range []string{"deadbeef", "DEADBEEF", "abcdef0123456789", "a" + h2[1:], "e" + h2[1:8]} {
		_, err := s.CreateRef(ctx, CreateRefRequest{Name: name, Type: Tag, Target: c1.Commit.Hash})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "commit hash") {
			t.Fatalf("create %q: %v, want ErrInvalid naming the hash rule", name, err)
		}
	}
	// Not hash-like: too short, too long or not hex.
	for _, name := range []string{"deadbee", "deadbeefg", "a" + strings.Repeat("0", 64), "dead-beef"} {
		if _, err := s.CreateRef(ctx, CreateRefRequest{Name: name, Type: Tag, Target: c1.Commit.Hash}); err != nil {
			t.Fatalf("create %q: %v", name, err)
		}
	}

	// A tag an older store holds under main's head abbreviation (commit
	// until the head's hash starts with a letter, so the name is valid):
	// bare hash notation still means the commit, "name@" the tag.
	for i := 0; !isLetter(h2[0]); i++ {
		h2 = mustCommit(t, s, "main", put(key("n", fmt.Sprint("t", i)), table("x"))).Commit.Hash.String()
	}
	abbrev, legacy := h2[:8], "f"+strings.Repeat("0", 7)
	for _, name := range []string{abbrev, legacy} {
		if _, err := s.createRef(ctx, CreateRefRequest{Name: name, Type: Tag, Target: c1.Commit.Hash}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		expr string
		want string // hash, or "" for not found
		ref  string
	}{
		{abbrev, h2, ""},
		{"@" + abbrev, h2, ""},
		{"main@" + abbrev, h2, "main"},
		{abbrev + "@", h1, abbrev},
		{abbrev + "@~0", h1, abbrev},
		{legacy + "@", h1, legacy},
		{legacy, "", ""}, // a hash of no commit, not the tag
	} {
		r, err := s.Resolve(ctx, tc.expr)
		if tc.want == "" {
			if !errors.Is(err, ErrCommitNotFound) {
				t.Fatalf("%s: %v, %+v; want commit not found", tc.expr, err, r)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		got := ""
		if r.Ref != nil {
			got = r.Ref.Name
		}
		if r.Hash.String() != tc.want || got != tc.ref {
			t.Fatalf("%s: hash %s ref %q, want %s ref %q", tc.expr, r.Hash, got, tc.want, tc.ref)
		}
	}
	if _, err := s.Resolve(ctx, "@"); !errors.Is(err, ErrInvalid) {
		t.Fatalf(`"@": %v`, err)
	}
}

// TestNewKeyLimits: content is put only under keys within the documented
// limits; a longer key from an older store is still read and deleted.
func TestNewKeyLimits(t *testing.T) {
	t.Parallel()
	s := openTestStore(t, Options{})
	mustCommit(t, s, "main", put(key("n"), ns()))
	long := strings.Repeat("x", MaxNewKeyElementBytes+1)
	deep := make(ContentKey, 0, 16)
	for i := 0; i < 16; i++ { // 16 × 200 bytes: each element fits, the key does not
		deep = append(deep, strings.Repeat(string(rune('a'+i)), 200))
	}
	for _, k := range []ContentKey{{"n", long}, {long}, deep} {
		_, err := s.Commit(t.Context(), CommitRequest{Branch: "main", Expected: head(t, s, "main"), Operations: []Operation{put(k, table("x"))}})
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "at most") {
			t.Fatalf("put %.40q…: %v, want ErrInvalid naming the limit", k.String(), err)
		}
	}
	ok := ContentKey{"n", strings.Repeat("y", MaxNewKeyElementBytes)}
	mustCommit(t, s, "main", put(ok, table("x")))

	// A longer key an older store may hold is still addressed by reads and
	// deletes: they answer "not found" here, not "invalid".
	old := ContentKey{"n", long}
	if _, err := s.GetContent(t.Context(), head(t, s, "main"), old); !errors.Is(err, ErrContentNotFound) {
		t.Fatalf("read of a long key: %v, want not found", err)
	}
	_, err := s.Commit(t.Context(), CommitRequest{Branch: "main", Expected: head(t, s, "main"), Operations: []Operation{del(old)}})
	if errors.Is(err, ErrInvalid) {
		t.Fatalf("delete of a long key: %v", err)
	}
	mustCommit(t, s, "main", del(ok))
}
