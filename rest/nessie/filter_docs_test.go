package nessie_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/rest/nessie"
)

// TestDocumentedFilters runs the filter examples of Nessie's documentation
// (the OpenAPI examples, the CEL filters page), the filters Nessie's own
// tests, CLI and Java client send, against floe's Nessie API.
func TestDocumentedFilters(t *testing.T) {
	e := newEnvWith(t, func(d *nessie.Deps) {
		d.Principal = func(*http.Request) string { return "nessie_committer" }
	})
	commit := func(msg, author, prop1 string, ops ...operation) string {
		t.Helper()
		meta := map[string]any{"message": msg, "author": author, "properties": map[string]string{"prop1": prop1}}
		e.ok(http.MethodPost, "/trees/"+url.PathEscape("main@"+e.head("main"))+"/history/commit",
			map[string]any{"commitMeta": meta, "operations": ops}, http.StatusOK, nil)
		return e.head("main")
	}
	c1 := commit("create namespaces", "nessie_author", "val1",
		put(namespace("a"), "a"), put(namespace("a", "b"), "a", "b"), put(namespace("a", "b", "c"), "a", "b", "c"),
		put(namespace("some"), "some"), put(namespace("some", "name"), "some", "name"),
		put(namespace("some", "name", "space"), "some", "name", "space"),
		put(namespace("x"), "x"), put(namespace("x", "y.z"), "x", "y.z"))
	c2 := commit("invent awesome things", "author-1", "val1",
		put(table("file:///w/t1.json", 1), "a", "b", "c", "t1"), put(table("file:///w/t2.json", 1), "a", "b", "c", "t2"),
		put(&content{Type: "ICEBERG_VIEW", MetadataLocation: "file:///w/v.json", VersionID: new(int64(1))}, "a", "b", "v"),
		put(table("file:///w/xt.json", 1), "x", "y.z", "t"))
	c3 := commit("add base table", "author-2", "val2", put(table("file:///w/base.json", 1), "some", "name", "space", "BaseTable"))
	commit("drop t2", "author-3", "val1", del("a", "b", "c", "t2"))
	for name, ref := range map[string]reference{
		"my-tag-or-branch": {Type: "BRANCH", Name: "main", Hash: c1},
		"rel-1.0":          {Type: "TAG", Hash: c2},
		"release/2":        {Type: "BRANCH", Name: "main", Hash: c3},
	} {
		e.ok(http.MethodPost, "/trees?name="+url.QueryEscape(name)+"&type="+ref.Type, ref, http.StatusOK, nil)
	}
	var log struct {
		LogEntries []struct {
			CommitMeta struct {
				Message    string    `json:"message"`
				CommitTime time.Time `json:"commitTime"`
			} `json:"commitMeta"`
		} `json:"logEntries"`
	}
	e.ok(http.MethodGet, "/trees/main/history", nil, http.StatusOK, &log)
	firstTime := log.LogEntries[len(log.LogEntries)-1].CommitMeta.CommitTime.Format(time.RFC3339Nano)

	// list answers with what a listing returns: keys joined by '.',
	// commit messages, reference names.
	list := func(path string) []string {
		t.Helper()
		var got struct {
			Entries []struct {
				Name key `json:"name"`
			} `json:"entries"`
			Diffs []struct {
				Key key `json:"key"`
			} `json:"diffs"`
			LogEntries []struct {
				CommitMeta struct {
					Message string `json:"message"`
				} `json:"commitMeta"`
			} `json:"logEntries"`
			References []reference `json:"references"`
		}
		e.ok(http.MethodGet, path, nil, http.StatusOK, &got)
		out := []string{}
		for _, x := range got.Entries {
			out = append(out, strings.Join(x.Name.Elements, "."))
		}
		for _, x := range got.Diffs {
			out = append(out, strings.Join(x.Key.Elements, "."))
		}
		for _, x := range got.LogEntries {
			out = append(out, x.CommitMeta.Message)
		}
		for _, x := range got.References {
			out = append(out, x.Name)
		}
		slices.Sort(out)
		return out
	}
	const (
		entries = "/trees/main/entries"
		history = "/trees/main/history"
		refs    = "/trees"
		refsAll = "/trees?fetch=ALL"
		diff    = "/trees/my-tag-or-branch/diff/main"
	)
	namespaces := []string{"a", "a.b", "a.b.c", "some", "some.name", "some.name.space", "x", "x.y.z"}
	tables := []string{"a.b.c.t1", "some.name.space.BaseTable", "x.y.z.t"}
	for _, tc := range []struct {
		path, filter string
		want         []string
	}{
		// Entries.
		{entries, "entry.namespace.startsWith('a.b.c')", []string{"a.b.c.t1"}},
		{entries, "entry.contentType in ['ICEBERG_TABLE','DELTA_LAKE_TABLE']", tables},
		{entries, "entry.namespace.startsWith('some.name.space') && entry.contentType in ['ICEBERG_TABLE','DELTA_LAKE_TABLE']", []string{"some.name.space.BaseTable"}},
		{entries, "entry.contentType=='ICEBERG_VIEW'", []string{"a.b.v"}},
		{entries, "entry.contentType in ['ICEBERG_TABLE', 'ICEBERG_VIEW']", append([]string{"a.b.v"}, tables...)},
		{entries, "size(entry.keyElements) == 4", []string{"a.b.c.t1", "some.name.space.BaseTable"}},
		{entries, "entry.encodedKey.startsWith('a.b.')", []string{"a.b.c", "a.b.c.t1", "a.b.v"}},
		{entries, "entry.encodedKey == 'a.b' || entry.encodedKey.startsWith('a.b.')", []string{"a.b", "a.b.c", "a.b.c.t1", "a.b.v"}},
		{entries, "entry.name.startsWith('t')", []string{"a.b.c.t1", "x.y.z.t"}},
		{entries, "entry.name.endsWith('Table')", []string{"some.name.space.BaseTable"}},
		{entries, "entry.key == 'x.y.z.t'", []string{"x.y.z.t"}},
		{entries, "entry.key.endsWith('.b.c.t1')", []string{"a.b.c.t1"}},
		{entries, `entry.namespace.startsWith('x.y\u001dz')`, []string{"x.y.z.t"}},
		{entries, `entry.encodedKey == 'x.y\u001dz' || entry.encodedKey.startsWith('x.y\u001dz.')`, []string{"x.y.z", "x.y.z.t"}},
		{entries, `entry.namespace.matches('a\\.b\\.c(\\.|$)')`, []string{"a.b.c.t1"}},
		{entries, "entry.namespaceElements == ['x', 'y.z']", []string{"x.y.z.t"}},
		{entries, "entry.contentType == 'NAMESPACE'", namespaces},
		{entries, "entry.contentType == 'NAMESPACE' && size(entry.keyElements) == 1", []string{"a", "some", "x"}},
		{entries, "entry.contentType == 'NAMESPACE' && size(entry.keyElements) == 2 && entry.encodedKey.startsWith('some.')", []string{"some.name"}},
		// Commit log.
		{history, "commit.author=='nessie_author'", []string{"create namespaces"}},
		{history, "commit.committer=='nessie_committer'", []string{"add base table", "create namespaces", "drop t2", "invent awesome things"}},
		{history, "commit.author == 'author-3' && commit.committer == 'random-committer'", []string{}},
		{history, "commit.author in ['author-1', 'author-3']", []string{"drop t2", "invent awesome things"}},
		{history, "!(commit.author in ['author-1', 'nessie_author'])", []string{"add base table", "drop t2"}},
		{history, "commit.author.matches('au.*-(2|3)')", []string{"add base table", "drop t2"}},
		{history, "commit.author != 'author-2'", []string{"create namespaces", "drop t2", "invent awesome things"}},
		{history, "timestamp(commit.commitTime) > timestamp('2021-05-31T08:23:15Z')", []string{"add base table", "create namespaces", "drop t2", "invent awesome things"}},
		{history, "timestamp(commit.commitTime) < timestamp('2021-05-31T08:23:15Z')", []string{}},
		{history, "timestamp(commit.commitTime) >= timestamp('" + firstTime + "')", []string{"add base table", "create namespaces", "drop t2", "invent awesome things"}},
		{history, "timestamp(commit.commitTime) < timestamp('" + firstTime + "')", []string{}},
		{history, "commit.properties['prop1'] == 'val1'", []string{"create namespaces", "drop t2", "invent awesome things"}},
		{history, "commit.properties['prop1'] == 'val3'", []string{}},
		{history, "commit.message == 'invent awesome things'", []string{"invent awesome things"}},
		{history, "operations.exists(op, op.key.startsWith('some.name.space.'))", []string{"add base table"}},
		{history, "operations.exists(op, op.key.startsWith('not.there.'))", []string{}},
		{history, "operations.exists(op, op.name == 'BaseTable')", []string{"add base table"}},
		{history, "operations.exists(op, op.type == 'PUT')", []string{"add base table", "create namespaces", "invent awesome things"}},
		{history, "operations.exists(op, op.type == 'PUT') && commit.message != 'create namespaces'", []string{"add base table", "invent awesome things"}},
		{history, "operations.exists(op, op.type == 'DELETE' && op.key == 'a.b.c.t2')", []string{"drop t2"}},
		{history, "operations.exists(op, op.content.type == 'ICEBERG_VIEW')", []string{"invent awesome things"}},
		// References.
		{refs, "refType == 'BRANCH'", []string{"main", "my-tag-or-branch", "release/2"}},
		{refs, "refType == 'TAG'", []string{"rel-1.0"}},
		{refs, "ref.name == 'my-tag-or-branch'", []string{"my-tag-or-branch"}},
		{refs, "ref.name.startsWith('rel')", []string{"rel-1.0", "release/2"}},
		{refs, "ref.name.contains('tag')", []string{"my-tag-or-branch"}},
		{refs, "ref.hash == '" + c1 + "'", []string{"my-tag-or-branch"}},
		{refsAll, "commit.message == 'invent awesome things'", []string{"rel-1.0"}},
		{refsAll, "refType == 'TAG' && commit.message == 'invent awesome things'", []string{"rel-1.0"}},
		{refsAll, "refMeta.numCommitsBehind > 0", []string{"my-tag-or-branch", "rel-1.0", "release/2"}},
		{refsAll, "refMeta.numCommitsAhead == 0 && ref.metadata.numCommitsBehind == 0", []string{"main"}},
		// Diff.
		{diff, "key.namespace=='a.b.c'", []string{"a.b.c.t1"}},
		{diff, "key.name == 'BaseTable'", []string{"some.name.space.BaseTable"}},
		{diff, "key.encodedKey.startsWith('a.b.')", []string{"a.b.c.t1", "a.b.v"}},
		{diff, "size(key.keyElements) == 3", []string{"a.b.v", "x.y.z.t"}},
	} {
		sep := "?"
		if strings.Contains(tc.path, "?") {
			sep = "&"
		}
		got := list(tc.path + sep + "filter=" + url.QueryEscape(tc.filter))
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(got, want) {
			t.Errorf("%s %s: %q, want %q", tc.path, tc.filter, got, want)
		}
	}

	// Bad filters are bad requests that say what is wrong.
	nested := "true"
	for range 8 {
		nested = "operations.all(o, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].all(i, " + nested + "))"
	}
	for _, tc := range []struct{ path, filter, want string }{
		{entries, "entry.nope == 'x'", "undefined field 'nope'"},
		{entries, "entry.namespace ==", "Syntax error"},
		{refs, "ref == 'main'", "no matching overload"},
		{refs, "system('x')", "undeclared reference to 'system'"},
		{diff, "name == 'x'", "undeclared reference to 'name'"},
		{history, "commit.properties['nope'] == 'x'", "no such key"},
		{history, nested, "cost limit"},
	} {
		ne := e.fail(http.MethodGet, tc.path+"?filter="+url.QueryEscape(tc.filter), nil, http.StatusBadRequest, "BAD_REQUEST")
		if !strings.Contains(ne.Message, tc.want) {
			t.Errorf("%s %s: message %q, want it to say %q", tc.path, tc.filter, ne.Message, tc.want)
		}
	}
}
