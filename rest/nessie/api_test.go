package nessie_test

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/versionstore"
)

func TestConfig(t *testing.T) {
	e := newEnv(t)
	var cfg map[string]any
	e.ok(http.MethodGet, "/config", nil, http.StatusOK, &cfg)
	for k, want := range map[string]any{
		"defaultBranch": "main", "minSupportedApiVersion": 2.0, "maxSupportedApiVersion": 2.0,
		"specVersion": "2.2.0", "noAncestorHash": versionstore.NoAncestor.String(),
	} {
		if cfg[k] != want {
			t.Errorf("config %s = %v, want %v", k, cfg[k], want)
		}
	}
	for _, k := range []string{"repositoryCreationTimestamp", "oldestPossibleCommitTimestamp"} {
		if s, _ := cfg[k].(string); !strings.HasSuffix(s, "Z") {
			t.Errorf("config %s = %v, want an ISO instant", k, cfg[k])
		}
	}
}

func TestReferences(t *testing.T) {
	e := newEnv(t)
	root := e.head("main")
	if root != versionstore.NoAncestor.String() {
		t.Fatalf("fresh main at %s", root)
	}
	e.commit("main", "ns", put(namespace("db"), "db"))
	h1 := e.head("main")

	t.Run("create", func(t *testing.T) {
		e := e.with(t)
		var got struct{ Reference reference }
		e.ok(http.MethodPost, "/trees?name=etl/daily&type=BRANCH", reference{Type: "BRANCH", Name: "main", Hash: h1}, http.StatusOK, &got)
		if !sameRef(got.Reference, reference{Type: "BRANCH", Name: "etl/daily", Hash: h1}) {
			t.Errorf("created %+v", got.Reference)
		}
		e.ok(http.MethodPost, "/trees?name=v1&type=TAG", reference{Type: "DETACHED", Hash: h1[:12]}, http.StatusOK, &got)
		if got.Reference.Type != "TAG" || got.Reference.Hash != h1 {
			t.Errorf("created tag %+v", got.Reference)
		}
		e.ok(http.MethodPost, "/trees?name=empty&type=BRANCH", reference{Type: "BRANCH", Name: "main", Hash: root}, http.StatusOK, nil)
		e.fail(http.MethodPost, "/trees?name=v1&type=BRANCH", reference{Type: "BRANCH", Name: "main", Hash: h1}, http.StatusConflict, "REFERENCE_ALREADY_EXISTS")
		ne := e.fail(http.MethodPost, "/trees?name=x&type=BRANCH", reference{Type: "BRANCH", Name: "main"}, http.StatusBadRequest, "BAD_REQUEST")
		if !strings.Contains(ne.Message, "hash must be provided") {
			t.Errorf("message %q", ne.Message)
		}
		e.fail(http.MethodPost, "/trees?name=x&type=BRANCH", "{not json", http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, "/trees?name=1bad&type=BRANCH", reference{Type: "BRANCH", Name: "main", Hash: h1}, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, "/trees?name=x&type=LEAF", reference{Type: "BRANCH", Name: "main", Hash: h1}, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, "/trees?name=x&type=BRANCH", reference{Type: "BRANCH", Name: "nope", Hash: h1}, http.StatusNotFound, "REFERENCE_NOT_FOUND")
		e.fail(http.MethodPost, "/trees?name=x&type=BRANCH", reference{Type: "BRANCH", Name: "main", Hash: strings.Repeat("ab", 32)}, http.StatusNotFound, "REFERENCE_NOT_FOUND")
	})

	t.Run("get", func(t *testing.T) {
		e := e.with(t)
		var got struct{ Reference reference }
		e.ok(http.MethodGet, "/trees/etl%2Fdaily", nil, http.StatusOK, &got)
		if got.Reference.Name != "etl/daily" || got.Reference.Metadata != nil {
			t.Errorf("got %+v", got.Reference)
		}
		e.ok(http.MethodGet, "/trees/-", nil, http.StatusOK, &got)
		if got.Reference.Name != "main" {
			t.Errorf("- is %+v", got.Reference)
		}
		e.fail(http.MethodGet, "/trees/nope", nil, http.StatusNotFound, "REFERENCE_NOT_FOUND")
		e.fail(http.MethodGet, "/trees/main@"+h1, nil, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodGet, "/trees/main?fetch=SOME", nil, http.StatusBadRequest, "BAD_REQUEST")
	})

	t.Run("fetch all metadata", func(t *testing.T) {
		e := e.with(t)
		e.commit("etl/daily", "ahead 1", put(namespace("a"), "a"))
		e.commit("etl/daily", "ahead 2", put(namespace("b"), "b"))
		e.commit("main", "behind 1", put(namespace("c"), "c"))
		var got struct{ Reference reference }
		e.ok(http.MethodGet, "/trees/etl%2Fdaily?fetch=ALL", nil, http.StatusOK, &got)
		md := got.Reference.Metadata
		if md["numCommitsAhead"] != 2.0 || md["numCommitsBehind"] != 1.0 || md["commonAncestorHash"] != h1 || md["numTotalCommits"] != 3.0 {
			t.Errorf("metadata %v", md)
		}
		if m, _ := md["commitMetaOfHEAD"].(map[string]any); m["message"] != "ahead 2" || m["committer"] != "anonymous" {
			t.Errorf("commitMetaOfHEAD %v", md["commitMetaOfHEAD"])
		}
	})

	t.Run("list, filter and paging", func(t *testing.T) {
		e := e.with(t)
		list := func(q string) (names []string, hasMore bool, token string) {
			var got struct {
				References []reference
				HasMore    bool
				Token      string
			}
			e.ok(http.MethodGet, "/trees"+q, nil, http.StatusOK, &got)
			for _, r := range got.References {
				names = append(names, r.Name)
			}
			return names, got.HasMore, got.Token
		}
		if names, _, _ := list(""); !slices.Equal(names, []string{"empty", "etl/daily", "main", "v1"}) {
			t.Errorf("all refs %v", names)
		}
		for q, want := range map[string][]string{
			"refType == 'TAG'": {"v1"},
			"ref.name.startsWith('e') && refType != 'TAG'":              {"empty", "etl/daily"},
			"ref.name.matches('^m.*') || ref.name == 'v1'":              {"main", "v1"},
			"ref.name in ['main', 'x'] && commit.message == 'behind 1'": {"main"},
		} {
			if names, _, _ := list("?filter=" + url.QueryEscape(q)); !slices.Equal(names, want) {
				t.Errorf("filter %q: %v, want %v", q, names, want)
			}
		}
		e.fail(http.MethodGet, "/trees?filter="+url.QueryEscape("ref =="), nil, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodGet, "/trees?filter="+url.QueryEscape("system('x')"), nil, http.StatusBadRequest, "BAD_REQUEST")
		var all []string
		q := "?max-records=3"
		for range 5 {
			names, more, token := list(q)
			all = append(all, names...)
			if !more {
				break
			}
			q = "?max-records=3&page-token=" + token
		}
		if !slices.Equal(all, []string{"empty", "etl/daily", "main", "v1"}) {
			t.Errorf("paged refs %v", all)
		}
		var withMeta struct{ References []reference }
		e.ok(http.MethodGet, "/trees?fetch=ALL", nil, http.StatusOK, &withMeta)
		for _, r := range withMeta.References {
			if r.Metadata == nil {
				t.Errorf("%s has no metadata with fetch=ALL", r.Name)
			}
		}
	})

	t.Run("assign", func(t *testing.T) {
		e := e.with(t)
		main := e.head("main")
		var got struct{ Reference reference }
		e.ok(http.MethodPut, "/trees/v1@"+h1+"?type=TAG", reference{Type: "BRANCH", Name: "main", Hash: main}, http.StatusOK, &got)
		if got.Reference.Hash != main || got.Reference.Type != "TAG" {
			t.Errorf("assigned %+v", got.Reference)
		}
		e.fail(http.MethodPut, "/trees/v1@"+h1+"?type=TAG", reference{Type: "BRANCH", Name: "main", Hash: main}, http.StatusConflict, "REFERENCE_CONFLICT")
		ne := e.fail(http.MethodPut, "/trees/v1?type=TAG", reference{Type: "BRANCH", Name: "main", Hash: main}, http.StatusBadRequest, "BAD_REQUEST")
		if ne.Message != "Expected hash must be provided" {
			t.Errorf("message %q", ne.Message)
		}
		e.fail(http.MethodPut, "/trees/v1@"+main+"~1?type=TAG", reference{Type: "BRANCH", Name: "main", Hash: main}, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPut, "/trees/v1@"+main+"?type=BRANCH", reference{Type: "BRANCH", Name: "main", Hash: main}, http.StatusNotFound, "REFERENCE_NOT_FOUND")
		e.fail(http.MethodPut, "/trees/v1@"+main+"?type=TAG", reference{Type: "BRANCH", Name: "main"}, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPut, "/trees/nope@"+main, reference{Type: "BRANCH", Name: "main", Hash: main}, http.StatusNotFound, "REFERENCE_NOT_FOUND")
		// Abbreviated expected hashes are fine when unambiguous.
		e.ok(http.MethodPut, "/trees/empty@"+root[:10], reference{Type: "TAG", Name: "v1", Hash: main}, http.StatusOK, &got)
		if got.Reference.Hash != main {
			t.Errorf("assigned branch %+v", got.Reference)
		}
	})

	t.Run("delete", func(t *testing.T) {
		e := e.with(t)
		main := e.head("main")
		e.fail(http.MethodDelete, "/trees/empty@"+h1+"?type=BRANCH", nil, http.StatusConflict, "REFERENCE_CONFLICT")
		e.fail(http.MethodDelete, "/trees/empty", nil, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodDelete, "/trees/empty@"+main+"?type=TAG", nil, http.StatusNotFound, "REFERENCE_NOT_FOUND")
		var got struct{ Reference reference }
		e.ok(http.MethodDelete, "/trees/empty@"+main+"?type=BRANCH", nil, http.StatusOK, &got)
		if !sameRef(got.Reference, reference{Type: "BRANCH", Name: "empty", Hash: main}) {
			t.Errorf("deleted %+v", got.Reference)
		}
		e.fail(http.MethodGet, "/trees/empty", nil, http.StatusNotFound, "REFERENCE_NOT_FOUND")
		e.fail(http.MethodDelete, "/trees/empty@"+main, nil, http.StatusNotFound, "REFERENCE_NOT_FOUND")
		e.fail(http.MethodDelete, "/trees/main@"+main, nil, http.StatusBadRequest, "BAD_REQUEST")
		e.ok(http.MethodDelete, "/trees/v1@"+main, nil, http.StatusOK, nil)
	})
}

type entry struct {
	Type      string   `json:"type"`
	Name      key      `json:"name"`
	ContentID string   `json:"contentId"`
	Content   *content `json:"content"`
}

type entriesResponse struct {
	Entries            []entry
	EffectiveReference reference
	HasMore            bool
	Token              string
}

func names(es []entry) []string {
	var out []string
	for _, x := range es {
		out = append(out, strings.Join(x.Name.Elements, "."))
	}
	return out
}

func TestCommitEntriesAndContents(t *testing.T) {
	e := newEnv(t)
	res := e.commit("main", "setup",
		put(namespace("db"), "db"), put(namespace("db", "sub"), "db", "sub"),
		put(table("file:///w/db/t1/v1.json", 1), "db", "t1"),
		put(table("file:///w/db/t2/v1.json", 2), "db", "t2"),
		put(&content{Type: "ICEBERG_VIEW", MetadataLocation: "file:///w/db/v/v1.json", VersionID: new(int64(3))}, "db", "v"),
		put(table("file:///w/odd.json", 4), "db", "a.b/c%d"),
		put(table("file:///w/db/sub/t3.json", 5), "db", "sub", "t3"))
	if res.TargetBranch.Name != "main" || res.TargetBranch.Type != "BRANCH" || len(res.AddedContents) != 7 {
		t.Fatalf("commit response %+v", res)
	}
	ids := map[string]string{}
	for _, a := range res.AddedContents {
		ids[strings.Join(a.Key.Elements, ".")] = a.ContentID
	}
	head := res.TargetBranch.Hash

	t.Run("entries", func(t *testing.T) {
		e := e.with(t)
		var got entriesResponse
		e.ok(http.MethodGet, "/trees/main/entries", nil, http.StatusOK, &got)
		want := []string{"db", "db.a.b/c%d", "db.sub", "db.sub.t3", "db.t1", "db.t2", "db.v"}
		if !slices.Equal(names(got.Entries), want) || got.HasMore {
			t.Errorf("entries %v, want %v", names(got.Entries), want)
		}
		if !sameRef(got.EffectiveReference, reference{Type: "BRANCH", Name: "main", Hash: head}) {
			t.Errorf("effective reference %+v", got.EffectiveReference)
		}
		if got.Entries[4].ContentID != ids["db.t1"] || got.Entries[4].Type != "ICEBERG_TABLE" || got.Entries[4].Content != nil {
			t.Errorf("entry %+v", got.Entries[4])
		}
		e.ok(http.MethodGet, "/trees/main/entries?content=true&key=db.t2&key=.db.a*.b*{c*[d&key=db.nope", nil, http.StatusOK, &got)
		if !slices.Equal(names(got.Entries), []string{"db.a.b/c%d", "db.t2"}) || got.Entries[1].Content.MetadataLocation != "file:///w/db/t2/v1.json" {
			t.Errorf("keyed entries %+v", got.Entries)
		}
		for q, want := range map[string][]string{
			"prefix-key=db.sub":                                                              {"db.sub", "db.sub.t3"},
			"min-key=db.sub.t3&max-key=db.t2":                                                {"db.sub.t3", "db.t1", "db.t2"},
			"filter=" + url.QueryEscape("entry.namespace=='db.sub'"):                         {"db.sub.t3"},
			"filter=" + url.QueryEscape("entry.contentType=='ICEBERG_VIEW'"):                 {"db.v"},
			"filter=" + url.QueryEscape("entry.contentType=='NAMESPACE'&&entry.name=='sub'"): {"db.sub"},
			"filter=" + url.QueryEscape("entry.encodedKey=='db.a\x1db/c%d'"):                 {"db.a.b/c%d"},
		} {
			got = entriesResponse{}
			e.ok(http.MethodGet, "/trees/main/entries?"+q, nil, http.StatusOK, &got)
			if !slices.Equal(names(got.Entries), want) {
				t.Errorf("%s: %v, want %v", q, names(got.Entries), want)
			}
		}
		// Paging, also with a filter that skips most entries.
		for _, q := range []string{"", "&filter=" + url.QueryEscape("entry.contentType == 'ICEBERG_TABLE'")} {
			var all []string
			path := "/trees/main/entries?max-records=2" + q
			for range 10 {
				e.ok(http.MethodGet, path, nil, http.StatusOK, &got)
				if len(got.Entries) > 2 {
					t.Fatalf("page of %d", len(got.Entries))
				}
				all = append(all, names(got.Entries)...)
				if !got.HasMore {
					break
				}
				path = "/trees/main/entries?max-records=2&page-token=" + got.Token + q
			}
			wantAll := want
			if q != "" {
				wantAll = []string{"db.a.b/c%d", "db.sub.t3", "db.t1", "db.t2"}
			}
			if !slices.Equal(all, wantAll) {
				t.Errorf("paged %q: %v", q, all)
			}
		}
		e.fail(http.MethodGet, "/trees/main/entries?page-token=zz", nil, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodGet, "/trees/main/entries?min-key=a..b", nil, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodGet, "/trees/nope/entries", nil, http.StatusNotFound, "REFERENCE_NOT_FOUND")
		// Reads at a detached hash and a relative spec.
		got = entriesResponse{}
		e.ok(http.MethodGet, "/trees/@"+head[:16]+"/entries", nil, http.StatusOK, &got)
		if !sameRef(got.EffectiveReference, reference{Type: "DETACHED", Hash: head}) || len(got.Entries) != 7 {
			t.Errorf("detached %+v", got.EffectiveReference)
		}
		e.ok(http.MethodGet, "/trees/main~1/entries", nil, http.StatusOK, &got)
		if len(got.Entries) != 0 || got.EffectiveReference.Hash != versionstore.NoAncestor.String() {
			t.Errorf("main~1: %+v", got)
		}
	})

	t.Run("contents", func(t *testing.T) {
		e := e.with(t)
		var one struct {
			Content            content
			EffectiveReference reference
		}
		for _, enc := range []string{".db.a*.b*{c*[d", "db.a\x1db/c%d"} {
			e.ok(http.MethodGet, "/trees/main/contents/"+url.PathEscape(enc), nil, http.StatusOK, &one)
			if one.Content.ID != ids["db.a.b/c%d"] || one.Content.MetadataLocation != "file:///w/odd.json" || *one.Content.SnapshotID != 4 {
				t.Errorf("%q: %+v", enc, one.Content)
			}
		}
		e.ok(http.MethodGet, "/trees/main@"+head+"/contents/db", nil, http.StatusOK, &one)
		if one.Content.Type != "NAMESPACE" || !slices.Equal(one.Content.Elements, []string{"db"}) || one.EffectiveReference.Hash != head {
			t.Errorf("namespace %+v", one)
		}
		e.ok(http.MethodGet, "/trees/main/contents/db.v", nil, http.StatusOK, &one)
		if one.Content.Type != "ICEBERG_VIEW" || *one.Content.VersionID != 3 {
			t.Errorf("view %+v", one.Content)
		}
		e.fail(http.MethodGet, "/trees/main/contents/db.nope", nil, http.StatusNotFound, "CONTENT_NOT_FOUND")
		e.fail(http.MethodGet, "/trees/main/contents/.db.*x", nil, http.StatusBadRequest, "BAD_REQUEST")

		type multi struct {
			Contents []struct {
				Key     key
				Content content
			}
			EffectiveReference reference
		}
		var m multi
		e.ok(http.MethodGet, "/trees/main/contents?key=db.t1&key=db.nope&key=db.sub.t3", nil, http.StatusOK, &m)
		if len(m.Contents) != 2 || m.Contents[0].Content.ID != ids["db.t1"] || m.Contents[1].Content.ID != ids["db.sub.t3"] {
			t.Errorf("GET contents %+v", m)
		}
		e.ok(http.MethodPost, "/trees/main/contents", map[string]any{"requestedKeys": []key{{[]string{"db", "a.b/c%d"}}, {[]string{"zz"}}}}, http.StatusOK, &m)
		if len(m.Contents) != 1 || m.Contents[0].Content.ID != ids["db.a.b/c%d"] || m.EffectiveReference.Name != "main" {
			t.Errorf("POST contents %+v", m)
		}
		e.fail(http.MethodPost, "/trees/main/contents", map[string]any{"requestedKeys": []key{{}}}, http.StatusBadRequest, "BAD_REQUEST")
	})

	t.Run("commit errors", func(t *testing.T) {
		e := e.with(t)
		path := "/trees/main@" + head + "/history/commit"
		body := func(ops ...operation) map[string]any {
			return map[string]any{"commitMeta": map[string]any{"message": "x"}, "operations": ops}
		}
		ne := e.fail(http.MethodPost, path, body(put(table("file:///w/x.json", 1), "db", "t1")), http.StatusConflict, "REFERENCE_CONFLICT")
		if ne.ErrorDetails == nil || ne.ErrorDetails.Type != "REFERENCE_CONFLICTS" || ne.ErrorDetails.Conflicts[0].ConflictType != "KEY_EXISTS" ||
			!slices.Equal(ne.ErrorDetails.Conflicts[0].Key.Elements, []string{"db", "t1"}) {
			t.Errorf("put without id: %+v", ne.ErrorDetails)
		}
		wrongID := table("file:///w/x.json", 1)
		wrongID.ID = ids["db.t2"]
		ne = e.fail(http.MethodPost, path, body(put(wrongID, "db", "t1")), http.StatusConflict, "REFERENCE_CONFLICT")
		if ne.ErrorDetails.Conflicts[0].ConflictType != "CONTENT_ID_DIFFERS" {
			t.Errorf("wrong id: %+v", ne.ErrorDetails)
		}
		ne = e.fail(http.MethodPost, path, body(put(table("file:///w/x.json", 1), "nons", "t")), http.StatusConflict, "REFERENCE_CONFLICT")
		if ne.ErrorDetails.Conflicts[0].ConflictType != "NAMESPACE_ABSENT" {
			t.Errorf("no namespace: %+v", ne.ErrorDetails)
		}
		ne = e.fail(http.MethodPost, path, body(del("db", "sub")), http.StatusConflict, "REFERENCE_CONFLICT")
		if ne.ErrorDetails.Conflicts[0].ConflictType != "NAMESPACE_NOT_EMPTY" {
			t.Errorf("non-empty namespace: %+v", ne.ErrorDetails)
		}
		ne = e.fail(http.MethodPost, path, body(del("db", "nope")), http.StatusConflict, "REFERENCE_CONFLICT")
		if ne.ErrorDetails.Conflicts[0].ConflictType != "KEY_DOES_NOT_EXIST" {
			t.Errorf("delete missing: %+v", ne.ErrorDetails)
		}
		e.fail(http.MethodPost, path, body(put(&content{Type: "DELTA_LAKE_TABLE"}, "db", "d")), http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, path, body(put(&content{Type: "ICEBERG_TABLE"}, "db", "d")), http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, path, body(put(namespace("other"), "db", "d")), http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, path, body(operation{Type: "RENAME", Key: key{[]string{"db"}}}), http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, path, body(del("db", "t1"), del("db", "t1")), http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, path, `{"commitMeta":`, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, path, map[string]any{"operations": []operation{}}, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, "/trees/main/history/commit", body(), http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, "/trees/main@"+strings.Repeat("0", 64)+"/history/commit", body(), http.StatusNotFound, "REFERENCE_NOT_FOUND")
		e.fail(http.MethodPost, "/trees/@"+head+"/history/commit", body(), http.StatusBadRequest, "BAD_REQUEST")
		e.ok(http.MethodPost, "/trees?name=t&type=TAG", reference{Type: "BRANCH", Name: "main", Hash: head}, http.StatusOK, nil)
		e.fail(http.MethodPost, "/trees/t@"+head+"/history/commit", body(), http.StatusBadRequest, "BAD_REQUEST")
	})

	t.Run("commit details", func(t *testing.T) {
		e := e.with(t)
		// A gzip-compressed body, as Nessie's Java client sends; an
		// update with the content id; and a stale expected hash whose keys
		// did not change since (rebased by the store).
		upd := table("file:///w/db/t1/v2.json", 11)
		upd.ID = ids["db.t1"]
		var res commitResponse
		data := gzipped(t, map[string]any{
			"commitMeta": map[string]any{"message": "update t1", "authors": []string{"alice"}, "committer": "mallory",
				"allProperties": map[string][]string{"k": {"v"}}},
			"operations": []operation{put(upd, "db", "t1")},
		})
		r := e.do(http.MethodPost, "/api/v2/trees/main@"+head+"/history/commit", data, "Content-Encoding", "gzip")
		if r.status != http.StatusOK {
			t.Fatalf("gzip commit: %d %s", r.status, r.body)
		}
		e.ok(http.MethodPost, "/trees/main@"+head+"/history/commit", map[string]any{
			"commitMeta": map[string]any{"message": "rebased"}, "operations": []operation{put(table("file:///w/db/t9.json", 1), "db", "t9")},
		}, http.StatusOK, &res)
		if len(res.AddedContents) != 1 {
			t.Errorf("added %+v", res.AddedContents)
		}
		var log struct {
			LogEntries []struct{ CommitMeta map[string]any }
		}
		e.ok(http.MethodGet, "/trees/main/history?max-records=2", nil, http.StatusOK, &log)
		m := log.LogEntries[1].CommitMeta
		if m["message"] != "update t1" || m["committer"] != "anonymous" || m["author"] != "alice" || fmt.Sprint(m["allProperties"]) != "map[k:[v]]" {
			t.Errorf("commit meta %v", m)
		}
		e.fail(http.MethodPost, "/trees/main@"+head+"/history/commit", map[string]any{
			"commitMeta": map[string]any{"message": "stale"}, "operations": []operation{del("db", "t1")},
		}, http.StatusConflict, "REFERENCE_CONFLICT")
		bad := e.do(http.MethodPost, "/api/v2/trees/main@"+head+"/history/commit", "not gzip", "Content-Encoding", "gzip")
		if bad.status != http.StatusBadRequest {
			t.Errorf("bad gzip: %d", bad.status)
		}
	})
}

func TestHistory(t *testing.T) {
	e := newEnv(t)
	e.commit("main", "c1", put(namespace("db"), "db"))
	for i := 2; i <= 6; i++ {
		e.commit("main", fmt.Sprintf("c%d", i), put(table(fmt.Sprintf("file:///w/t%d.json", i), int64(i)), "db", fmt.Sprintf("t%d", i)))
	}
	type logEntry struct {
		CommitMeta        map[string]any
		ParentCommitHash  string
		AdditionalParents []string
		Operations        []operation
	}
	type logResp struct {
		LogEntries []logEntry
		HasMore    bool
		Token      string
	}
	msgs := func(l logResp) (out []string) {
		for _, x := range l.LogEntries {
			out = append(out, x.CommitMeta["message"].(string))
		}
		return out
	}
	var l logResp
	e.ok(http.MethodGet, "/trees/main/history", nil, http.StatusOK, &l)
	if !slices.Equal(msgs(l), []string{"c6", "c5", "c4", "c3", "c2", "c1"}) || l.HasMore {
		t.Errorf("log %v", msgs(l))
	}
	if l.LogEntries[0].Operations != nil || l.LogEntries[0].ParentCommitHash != "" {
		t.Errorf("MINIMAL log has details: %+v", l.LogEntries[0])
	}
	e.ok(http.MethodGet, "/trees/main/history?fetch=ALL", nil, http.StatusOK, &l)
	c5 := l.LogEntries[1].CommitMeta["hash"].(string)
	if l.LogEntries[0].ParentCommitHash != c5 || len(l.LogEntries[0].Operations) != 1 ||
		l.LogEntries[0].Operations[0].Type != "PUT" || l.LogEntries[0].Operations[0].Content.MetadataLocation != "file:///w/t6.json" ||
		len(l.LogEntries[0].AdditionalParents) != 0 {
		t.Errorf("ALL log entry %+v", l.LogEntries[0])
	}
	if l.LogEntries[5].ParentCommitHash != versionstore.NoAncestor.String() {
		t.Errorf("root parent %s", l.LogEntries[5].ParentCommitHash)
	}
	var all []string
	path := "/trees/main/history?max-records=4"
	for range 5 {
		e.ok(http.MethodGet, path, nil, http.StatusOK, &l)
		all = append(all, msgs(l)...)
		if !l.HasMore {
			break
		}
		path = "/trees/main/history?max-records=4&page-token=" + l.Token
	}
	if !slices.Equal(all, []string{"c6", "c5", "c4", "c3", "c2", "c1"}) {
		t.Errorf("paged log %v", all)
	}
	e.ok(http.MethodGet, "/trees/main/history?limit-hash="+c5, nil, http.StatusOK, &l)
	if !slices.Equal(msgs(l), []string{"c6", "c5"}) {
		t.Errorf("limit-hash log %v", msgs(l))
	}
	e.ok(http.MethodGet, "/trees/main~2/history?filter="+url.QueryEscape("commit.message in ['c1', 'c3', 'c6'] && commit.committer == 'anonymous'"), nil, http.StatusOK, &l)
	if !slices.Equal(msgs(l), []string{"c3", "c1"}) {
		t.Errorf("filtered log %v", msgs(l))
	}
	e.ok(http.MethodGet, "/trees/@"+c5+"/history?max-records=1", nil, http.StatusOK, &l)
	if !slices.Equal(msgs(l), []string{"c5"}) || !l.HasMore {
		t.Errorf("detached log %v", msgs(l))
	}
	e.fail(http.MethodGet, "/trees/main/history?max-records=x", nil, http.StatusBadRequest, "BAD_REQUEST")
	e.fail(http.MethodGet, "/trees/main~9/history", nil, http.StatusNotFound, "REFERENCE_NOT_FOUND")
	e.fail(http.MethodGet, "/trees/main/history?limit-hash=zz", nil, http.StatusBadRequest, "BAD_REQUEST")

	t.Run("page cap", func(t *testing.T) {
		e := e.with(t)
		// 261 commits in all: a page never holds more than 250.
		ops := []operation{}
		for i := range 255 {
			e.ok(http.MethodPost, "/trees/main@"+e.head("main")+"/history/commit", map[string]any{
				"commitMeta": map[string]any{"message": fmt.Sprint("bulk ", i)}, "operations": ops}, http.StatusOK, nil)
		}
		e.ok(http.MethodGet, "/trees/main/history?max-records=1000", nil, http.StatusOK, &l)
		if len(l.LogEntries) != 250 || !l.HasMore {
			t.Errorf("page of %d, hasMore %v", len(l.LogEntries), l.HasMore)
		}
	})
}

type diffResp struct {
	Diffs []struct {
		Key      key
		From, To *content
	}
	EffectiveFromReference, EffectiveToReference reference
	HasMore                                      bool
	Token                                        string
}

func diffKeys(d diffResp) (out []string) {
	for _, x := range d.Diffs {
		out = append(out, strings.Join(x.Key.Elements, "."))
	}
	return out
}

func TestDiff(t *testing.T) {
	e := newEnv(t)
	e.commit("main", "ns", put(namespace("db"), "db"), put(table("file:///w/a1.json", 1), "db", "a"), put(table("file:///w/b1.json", 1), "db", "b"))
	base := e.head("main")
	e.branch("dev", "main")
	ids := map[string]string{}
	var entries entriesResponse
	e.ok(http.MethodGet, "/trees/dev/entries", nil, http.StatusOK, &entries)
	for _, x := range entries.Entries {
		ids[strings.Join(x.Name.Elements, ".")] = x.ContentID
	}
	a2 := table("file:///w/a2.json", 2)
	a2.ID = ids["db.a"]
	e.commit("dev", "change", put(a2, "db", "a"), del("db", "b"), put(table("file:///w/c.json", 1), "db", "c"), put(namespace("db", "x"), "db", "x"))

	var d diffResp
	e.ok(http.MethodGet, "/trees/main/diff/dev", nil, http.StatusOK, &d)
	if !slices.Equal(diffKeys(d), []string{"db.a", "db.b", "db.c", "db.x"}) {
		t.Fatalf("diff %v", diffKeys(d))
	}
	if d.Diffs[0].From.MetadataLocation != "file:///w/a1.json" || d.Diffs[0].To.MetadataLocation != "file:///w/a2.json" ||
		d.Diffs[1].To != nil || d.Diffs[2].From != nil {
		t.Errorf("diff values %+v", d.Diffs)
	}
	if d.EffectiveFromReference.Name != "main" || d.EffectiveToReference.Name != "dev" || d.EffectiveFromReference.Hash != base {
		t.Errorf("effective refs %+v %+v", d.EffectiveFromReference, d.EffectiveToReference)
	}
	for q, want := range map[string][]string{
		"key=db.a&key=db.c":         {"db.a", "db.c"},
		"min-key=db.b&max-key=db.c": {"db.b", "db.c"},
		"prefix-key=db.x":           {"db.x"},
		"filter=" + url.QueryEscape("key.name.startsWith('b') || key.key == 'db.x'"): {"db.b", "db.x"},
	} {
		e.ok(http.MethodGet, "/trees/main/diff/dev?"+q, nil, http.StatusOK, &d)
		if !slices.Equal(diffKeys(d), want) {
			t.Errorf("%s: %v, want %v", q, diffKeys(d), want)
		}
	}
	var all []string
	path := "/trees/main@" + base + "/diff/dev?max-records=1"
	for range 6 {
		e.ok(http.MethodGet, path, nil, http.StatusOK, &d)
		all = append(all, diffKeys(d)...)
		if !d.HasMore {
			break
		}
		path = "/trees/main@" + base + "/diff/dev?max-records=1&page-token=" + d.Token
	}
	if !slices.Equal(all, []string{"db.a", "db.b", "db.c", "db.x"}) {
		t.Errorf("paged diff %v", all)
	}
	e.ok(http.MethodGet, "/trees/dev/diff/dev~1", nil, http.StatusOK, &d)
	if len(d.Diffs) != 4 || d.Diffs[0].From.MetadataLocation != "file:///w/a2.json" {
		t.Errorf("reverse diff %+v", d.Diffs)
	}
	e.ok(http.MethodGet, "/trees/-/diff/main", nil, http.StatusOK, &d)
	if len(d.Diffs) != 0 {
		t.Errorf("self diff %v", diffKeys(d))
	}
	e.fail(http.MethodGet, "/trees/main/diff/nope", nil, http.StatusNotFound, "REFERENCE_NOT_FOUND")
}

type mergeResp struct {
	WasApplied          bool
	WasSuccessful       bool
	ResultantTargetHash string
	CommonAncestor      string
	TargetBranch        string
	EffectiveTargetHash string
	ExpectedHash        string
	Details             []struct {
		Key           key
		MergeBehavior string
		Conflict      *conflict
	}
}

func TestMergeAndTransplant(t *testing.T) {
	e := newEnv(t)
	e.commit("main", "ns", put(namespace("db"), "db"), put(table("file:///w/t1.json", 1), "db", "t"))
	base := e.head("main")
	e.branch("dev", "main")
	var c struct{ Content content }
	e.ok(http.MethodGet, "/trees/main/contents/db.t", nil, http.StatusOK, &c)
	id := c.Content.ID
	upd := func(loc string) *content {
		x := table(loc, 2)
		x.ID = id
		return x
	}
	e.commit("dev", "dev change", put(upd("file:///w/t2.json"), "db", "t"), put(table("file:///w/u.json", 1), "db", "u"))
	devHead := e.head("dev")
	merge := func(target string, body map[string]any) string {
		return "/trees/" + target + "@" + e.head(target) + "/history/merge"
	}

	t.Run("dry run", func(t *testing.T) {
		e := e.with(t)
		var m mergeResp
		e.ok(http.MethodPost, merge("main", nil), map[string]any{"fromRefName": "dev", "fromHash": devHead, "dryRun": true}, http.StatusOK, &m)
		if !m.WasSuccessful || m.WasApplied || m.CommonAncestor != base || m.TargetBranch != "main" || e.head("main") != base {
			t.Errorf("dry run %+v", m)
		}
	})

	t.Run("clean merge", func(t *testing.T) {
		e := e.with(t)
		var m mergeResp
		e.ok(http.MethodPost, merge("main", nil), map[string]any{"fromRefName": "dev", "fromHash": devHead,
			"commitMeta": map[string]any{"message": "merge dev"}}, http.StatusOK, &m)
		if !m.WasSuccessful || !m.WasApplied || m.CommonAncestor != base || m.EffectiveTargetHash != base || m.ExpectedHash != base ||
			m.ResultantTargetHash != e.head("main") || len(m.Details) != 2 {
			t.Errorf("merge %+v", m)
		}
		var l struct {
			LogEntries []struct {
				CommitMeta        map[string]any
				AdditionalParents []string
			}
		}
		e.ok(http.MethodGet, "/trees/main/history?fetch=ALL&max-records=1", nil, http.StatusOK, &l)
		if l.LogEntries[0].CommitMeta["message"] != "merge dev" || !slices.Equal(l.LogEntries[0].AdditionalParents, []string{devHead}) {
			t.Errorf("merge commit %+v", l.LogEntries[0])
		}
		// Merging again is a successful no-op.
		e.ok(http.MethodPost, merge("main", nil), map[string]any{"fromRefName": "dev", "fromHash": devHead}, http.StatusOK, &m)
		if !m.WasSuccessful || m.WasApplied {
			t.Errorf("re-merge %+v", m)
		}
	})

	t.Run("conflicts", func(t *testing.T) {
		e := e.with(t)
		e.commit("dev", "dev again", put(upd("file:///w/t3.json"), "db", "t"))
		e.commit("main", "main change", put(upd("file:///w/t4.json"), "db", "t"))
		body := map[string]any{"fromRefName": "dev", "fromHash": e.head("dev")}
		ne := e.fail(http.MethodPost, merge("main", nil), body, http.StatusConflict, "REFERENCE_CONFLICT")
		if ne.ErrorDetails == nil || len(ne.ErrorDetails.Conflicts) != 1 || ne.ErrorDetails.Conflicts[0].ConflictType != "VALUE_DIFFERS" ||
			!slices.Equal(ne.ErrorDetails.Conflicts[0].Key.Elements, []string{"db", "t"}) {
			t.Errorf("conflict details %+v", ne.ErrorDetails)
		}
		body["returnConflictAsResult"] = true
		var m mergeResp
		e.ok(http.MethodPost, merge("main", nil), body, http.StatusOK, &m)
		if m.WasSuccessful || m.WasApplied || len(m.Details) != 1 || m.Details[0].Conflict == nil || m.Details[0].Conflict.ConflictType != "VALUE_DIFFERS" ||
			m.Details[0].MergeBehavior != "NORMAL" {
			t.Errorf("conflict as result %+v", m)
		}
		delete(body, "returnConflictAsResult")
		body["keyMergeModes"] = []map[string]any{{"key": key{[]string{"db", "t"}}, "mergeBehavior": "DROP"}}
		e.ok(http.MethodPost, merge("main", nil), body, http.StatusOK, &m)
		if !m.WasSuccessful || m.WasApplied || m.Details[0].MergeBehavior != "DROP" {
			t.Errorf("DROP merge %+v", m)
		}
		body["keyMergeModes"] = nil
		body["defaultKeyMergeMode"] = "FORCE"
		e.ok(http.MethodPost, merge("main", nil), body, http.StatusOK, &m)
		if !m.WasApplied {
			t.Errorf("FORCE merge %+v", m)
		}
		e.ok(http.MethodGet, "/trees/main/contents/db.t", nil, http.StatusOK, &c)
		if c.Content.MetadataLocation != "file:///w/t3.json" {
			t.Errorf("after FORCE: %+v", c.Content)
		}
	})

	t.Run("merge errors", func(t *testing.T) {
		e := e.with(t)
		e.fail(http.MethodPost, merge("main", nil), map[string]any{"fromRefName": "dev"}, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, merge("main", nil), map[string]any{"fromRefName": "nope", "fromHash": devHead}, http.StatusNotFound, "REFERENCE_NOT_FOUND")
		e.fail(http.MethodPost, merge("main", nil), map[string]any{"fromRefName": "dev", "fromHash": devHead, "defaultKeyMergeMode": "MAYBE"}, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, merge("main", nil), map[string]any{"fromRefName": "dev", "fromHash": devHead,
			"keyMergeModes": []map[string]any{{"key": key{[]string{"db", "t"}}, "mergeBehavior": "NORMAL", "resolvedContent": table("file:///w/r.json", 1)}}}, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, merge("main", nil), map[string]any{"fromRefName": "dev", "fromHash": devHead,
			"keyMergeModes": []map[string]any{{"key": key{[]string{"db", "untouched"}}, "mergeBehavior": "FORCE"}}}, http.StatusBadRequest, "BAD_REQUEST")
		e.fail(http.MethodPost, "/trees/main/history/merge", map[string]any{"fromRefName": "dev", "fromHash": devHead}, http.StatusBadRequest, "BAD_REQUEST")
		// A relative fromHash applies to fromRefName; dev~1 is merged already.
		var m mergeResp
		e.ok(http.MethodPost, "/trees/main@"+base+"/history/merge", map[string]any{"fromRefName": "dev", "fromHash": "~1"}, http.StatusOK, &m)
		if !m.WasSuccessful || m.WasApplied || m.ExpectedHash != base {
			t.Errorf("merge of dev~1 %+v", m)
		}
	})

	t.Run("transplant", func(t *testing.T) {
		e := e.with(t)
		e.branch("tp", "main")
		e.branch("src", "main")
		s1 := e.commit("src", "one", put(table("file:///w/x.json", 1), "db", "x")).TargetBranch.Hash
		s2 := e.commit("src", "two", put(table("file:///w/y.json", 1), "db", "y")).TargetBranch.Hash
		path := "/trees/tp@" + e.head("tp") + "/history/transplant"
		var m mergeResp
		e.ok(http.MethodPost, path, map[string]any{"fromRefName": "src", "hashesToTransplant": []string{s1, s2[:12]}, "dryRun": true}, http.StatusOK, &m)
		if !m.WasSuccessful || m.WasApplied || m.CommonAncestor != "" {
			t.Errorf("dry transplant %+v", m)
		}
		e.ok(http.MethodPost, path, map[string]any{"fromRefName": "src", "hashesToTransplant": []string{s1, s2}}, http.StatusOK, &m)
		if !m.WasSuccessful || !m.WasApplied || m.ResultantTargetHash != e.head("tp") {
			t.Errorf("transplant %+v", m)
		}
		var l struct {
			LogEntries []struct{ CommitMeta map[string]any }
		}
		e.ok(http.MethodGet, "/trees/tp/history?max-records=2", nil, http.StatusOK, &l)
		if l.LogEntries[0].CommitMeta["message"] != "two" || l.LogEntries[1].CommitMeta["message"] != "one" {
			t.Errorf("transplanted log %+v", l.LogEntries)
		}
		// Transplanting a change to a key the target changed too.
		e.commit("src", "src t", put(upd("file:///w/s.json"), "db", "t"))
		e.commit("tp", "tp t", put(upd("file:///w/p.json"), "db", "t"))
		body := map[string]any{"fromRefName": "src", "hashesToTransplant": []string{e.head("src")}}
		ne := e.fail(http.MethodPost, "/trees/tp@"+e.head("tp")+"/history/transplant", body, http.StatusConflict, "REFERENCE_CONFLICT")
		if ne.ErrorDetails == nil || ne.ErrorDetails.Conflicts[0].ConflictType != "VALUE_DIFFERS" {
			t.Errorf("transplant conflict %+v", ne.ErrorDetails)
		}
		body["returnConflictAsResult"] = true
		e.ok(http.MethodPost, "/trees/tp@"+e.head("tp")+"/history/transplant", body, http.StatusOK, &m)
		if m.WasSuccessful || m.Details[0].Conflict == nil {
			t.Errorf("transplant conflict as result %+v", m)
		}
		e.fail(http.MethodPost, "/trees/tp@"+e.head("tp")+"/history/transplant", map[string]any{"fromRefName": "src"}, http.StatusBadRequest, "BAD_REQUEST")
	})
}

func TestUnknownRoute(t *testing.T) {
	e := newEnv(t)
	e.fail(http.MethodGet, "/nothing/here", nil, http.StatusNotFound, "UNKNOWN")
}

func sameRef(a, b reference) bool { return a.Type == b.Type && a.Name == b.Name && a.Hash == b.Hash }

func TestRecentChangesAndRepositoryConfig(t *testing.T) {
	e := newEnv(t)
	root := e.head("main")
	c1 := e.commit("main", "one", put(namespace("a"), "a")).TargetBranch.Hash
	c2 := e.commit("main", "two", put(namespace("b"), "b")).TargetBranch.Hash
	var h struct {
		Reference reference
		Current   struct {
			CommitHash        string
			CommitConsistency string
			Meta              map[string]any
		}
		Previous []struct {
			CommitHash        string
			CommitConsistency string
		}
		CommitLogConsistency string
	}
	e.ok(http.MethodGet, "/trees/main/recent-changes?scan-commits=10", nil, http.StatusOK, &h)
	if h.Current.CommitHash != c2 || h.Current.CommitConsistency != "COMMIT_CONSISTENT" || h.Current.Meta["message"] != "two" ||
		h.CommitLogConsistency != "COMMIT_CONSISTENT" || h.Reference.Name != "main" {
		t.Errorf("recent changes %+v", h)
	}
	var prev []string
	for _, p := range h.Previous {
		prev = append(prev, p.CommitHash)
	}
	if !slices.Equal(prev, []string{c1, root}) {
		t.Errorf("previous heads %v, want %v", prev, []string{c1, root})
	}
	e.fail(http.MethodGet, "/trees/nope/recent-changes", nil, http.StatusNotFound, "REFERENCE_NOT_FOUND")
	e.fail(http.MethodGet, "/trees/main/recent-changes?scan-commits=x", nil, http.StatusBadRequest, "BAD_REQUEST")
	var cfg struct{ Configs []any }
	e.ok(http.MethodGet, "/config/repository?type=GARBAGE_COLLECTOR", nil, http.StatusOK, &cfg)
	if cfg.Configs == nil || len(cfg.Configs) != 0 {
		t.Errorf("repository configs %+v", cfg)
	}
}
