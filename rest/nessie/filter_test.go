package nessie

import (
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/versionstore"
)

func newTestFilters(t testing.TB) *filterCompiler {
	t.Helper()
	fc, err := newFilterCompiler()
	if err != nil {
		t.Fatal(err)
	}
	return fc
}

// testCommit is a commit with a PUT of a.b\x2Ec.t (one element with a dot)
// and a DELETE of x.
func testCommit() *versionstore.Commit {
	return &versionstore.Commit{
		Hash: versionstore.NoAncestor, Parents: []versionstore.Hash{versionstore.NoAncestor},
		Author: "alice", Committer: "bob", Message: "load tables",
		CommitTime: time.Date(2021, 6, 1, 10, 0, 0, 0, time.UTC), AuthorTime: time.Date(2021, 5, 30, 0, 0, 0, 0, time.UTC),
		Properties: map[string]string{"prop1": "val1"},
		Operations: []versionstore.CommitOp{
			{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"a", "b.c", "t"}},
			{Kind: versionstore.OpDelete, Key: versionstore.ContentKey{"x"}},
		},
	}
}

func TestFilterMatch(t *testing.T) {
	fc := newTestFilters(t)
	key := versionstore.ContentKey{"a", "b.c", "t"}
	c := testCommit()
	contents := map[string]*versionstore.Content{string(key.Encode()): {Type: versionstore.IcebergTable, ID: "id-1"}}
	ahead, behind, total := 2, 1, int64(7)
	ref := &versionstore.Ref{Name: "etl/daily", Type: versionstore.Branch, Head: versionstore.NoAncestor}
	md := &referenceMetadata{NumCommitsAhead: &ahead, NumCommitsBehind: &behind, NumTotalCommits: &total, CommonAncestorHash: "abc"}
	vars := map[filterKind]map[string]any{
		entriesFilter:    entryVars(key, versionstore.IcebergTable),
		diffFilter:       diffVars(key),
		commitLogFilter:  commitLogVars(c, contents),
		referencesFilter: referenceVars(ref, c, md),
	}
	for _, tc := range []struct {
		kind filterKind
		expr string
		want bool
	}{
		{entriesFilter, "", true},
		{entriesFilter, "entry.key == 'a.b.c.t'", true},
		{entriesFilter, "entry.encodedKey == 'a.b\x1dc.t'", true},
		{entriesFilter, "entry.namespace == 'a.b\x1dc' && entry.name == 't'", true},
		{entriesFilter, "entry.keyElements == ['a', 'b.c', 't'] && entry.namespaceElements[1] == 'b.c'", true},
		{entriesFilter, "size(entry.keyElements) == 3 && entry.contentType in ['ICEBERG_TABLE']", true},
		{entriesFilter, "entry.contentType == 'NAMESPACE' || !entry.name.matches('^t$')", false},
		{diffFilter, "key.name == 't' && key.namespace.startsWith('a.b')", true},
		{diffFilter, "key.key.endsWith('.t') && key.encodedKey.contains('\x1d')", true},
		{commitLogFilter, "commit.author == 'alice' && commit.committer == 'bob' && commit.authors == ['alice']", true},
		{commitLogFilter, "commit.message.startsWith('load') && commit.properties['prop1'] == 'val1'", true},
		{commitLogFilter, "commit.allProperties['prop1'] == ['val1'] && size(commit.parentCommitHashes) == 1", true},
		{commitLogFilter, "timestamp(commit.commitTime) > timestamp('2021-05-31T08:23:15Z')", true},
		{commitLogFilter, "commit.authorTime < timestamp('2021-05-31T08:23:15Z')", true},
		{commitLogFilter, "operations.exists(op, op.key.startsWith('a.b.c.') && op.type == 'PUT')", true},
		{commitLogFilter, "operations.exists(op, op.type == 'PUT' && op.content.type == 'ICEBERG_TABLE' && op.content.id == 'id-1')", true},
		{commitLogFilter, "operations.all(op, op.type == 'PUT')", false},
		{commitLogFilter, "operations.exists(op, op.type == 'DELETE' && op.name == 'x' && op.namespace == '' && op.content.id == '')", true},
		{referencesFilter, "ref.name == 'etl/daily' && refType == 'BRANCH'", true},
		{referencesFilter, "ref.name.startsWith('etl') && commit.message == 'load tables'", true},
		{referencesFilter, "refMeta.numCommitsAhead == 2 && refMeta.numCommitsBehind == 1 && refMeta.numTotalCommits == 7", true},
		{referencesFilter, "refMeta.commitMetaOfHEAD.author == 'alice' && ref.metadata.commonAncestorHash == 'abc'", true},
		{referencesFilter, "refType == 'TAG'", false},
	} {
		f, err := fc.compile(tc.kind, tc.expr)
		if err != nil {
			t.Fatalf("compile %q: %v", tc.expr, err)
		}
		got, err := f.match(vars[tc.kind])
		if err != nil {
			t.Fatalf("eval %q: %v", tc.expr, err)
		}
		if got != tc.want {
			t.Errorf("%q = %v, want %v", tc.expr, got, tc.want)
		}
	}
}

// TestFilterErrors checks that bad filters are bad requests naming the
// problem: syntax, unknown variables and fields (per listing), types.
func TestFilterErrors(t *testing.T) {
	fc := newTestFilters(t)
	for _, tc := range []struct {
		kind filterKind
		expr string
		want string
	}{
		{referencesFilter, "ref ==", "Syntax error"},
		{referencesFilter, "ref.name == 'x", "Syntax error"},
		{referencesFilter, "system('x')", "undeclared reference to 'system'"},
		{referencesFilter, "ref == 'main'", "no matching overload"},
		{referencesFilter, "ref.type == 'BRANCH'", "undefined field 'type'"},
		{referencesFilter, "ref.name", "not bool"},
		{referencesFilter, "entry.name == 'x'", "undeclared reference to 'entry'"},
		{entriesFilter, "commit.author == 'x'", "undeclared reference to 'commit'"},
		{entriesFilter, "entry.contentId == 'x'", "undefined field 'contentId'"},
		{diffFilter, "name == 'x'", "undeclared reference to 'name'"},
		{commitLogFilter, "commit.author.startsWith(1)", "no matching overload"},
		{commitLogFilter, "commit.author.matches('(')", "missing closing )"},
		{commitLogFilter, strings.Repeat("(", 100) + "true" + strings.Repeat(")", 100), "recursion"},
		{commitLogFilter, strings.Repeat("x", maxFilterBytes+1), "longer than"},
	} {
		_, err := fc.compile(tc.kind, tc.expr)
		if err == nil {
			t.Errorf("compile %q: want an error", tc.expr)
			continue
		}
		if ae, ok := err.(*apiError); !ok || ae.status != 400 || !strings.Contains(ae.msg, tc.want) {
			t.Errorf("compile %q: %v, want a bad request saying %q", tc.expr, err, tc.want)
		}
	}
}

// TestFilterCost checks both bounds: one evaluation stops at
// maxFilterCost, and a request's evaluations together stop at
// maxFilterCostPerRequest.
func TestFilterCost(t *testing.T) {
	fc := newTestFilters(t)
	vars := commitLogVars(testCommit(), nil)
	nested := "true"
	for range 8 {
		nested = "operations.all(o, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].all(i, " + nested + "))"
	}
	f, err := fc.compile(commitLogFilter, nested)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.match(vars); err == nil || !strings.Contains(err.Error(), "cost limit") {
		t.Errorf("nested comprehensions: %v, want the cost limit", err)
	}

	f, err = fc.compile(commitLogFilter, "operations.exists(op, op.name == 'x')")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.match(vars); err != nil || f.spent == 0 {
		t.Fatalf("match: %v, spent %d", err, f.spent)
	}
	f.spent = maxFilterCostPerRequest // as if the request had evaluated it many times
	if _, err := f.match(vars); err != nil {
		t.Fatalf("match at the budget: %v", err)
	}
	if _, err := f.match(vars); err == nil || !strings.Contains(err.Error(), "for this request") {
		t.Errorf("match over the budget: %v, want the request's budget", err)
	}
	// The budget is per request: the same filter compiled again (from the
	// cache) starts afresh.
	g, err := fc.compile(commitLogFilter, "operations.exists(op, op.name == 'x')")
	if err != nil {
		t.Fatal(err)
	}
	if g.compiledFilter != f.compiledFilter {
		t.Errorf("the second compile did not reuse the program")
	}
	if _, err := g.match(vars); err != nil {
		t.Errorf("fresh request: %v", err)
	}
}

func FuzzFilter(f *testing.F) {
	f.Add(int8(0), "entry.namespace.startsWith('a') && entry.contentType in ['ICEBERG_TABLE']")
	f.Add(int8(1), "operations.exists(op, op.key.matches('^a.*')) || commit.properties['p'] == 'x'")
	f.Add(int8(2), "ref.name == 'main' && refType.startsWith('B') && refMeta.numCommitsAhead > 0")
	f.Add(int8(3), "!(key.name in ['x', 'y']) && size(key.keyElements) >= 2")
	fc := newTestFilters(f)
	key := versionstore.ContentKey{"a", "b.c", "t"}
	ref := &versionstore.Ref{Name: "main", Type: versionstore.Branch, Head: versionstore.NoAncestor}
	vars := map[filterKind]map[string]any{
		entriesFilter:    entryVars(key, versionstore.Namespace),
		commitLogFilter:  commitLogVars(testCommit(), nil),
		referencesFilter: referenceVars(ref, nil, nil),
		diffFilter:       diffVars(key),
	}
	f.Fuzz(func(t *testing.T, kind int8, expr string) {
		k := filterKind(uint8(kind) % uint8(numFilterKinds))
		flt, err := fc.compile(k, expr)
		if err != nil {
			return
		}
		_, _ = flt.match(vars[k])
	})
}
