package nessie_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestHashLikeReferenceNames: creating a reference named like a commit hash
// is a 400 BAD_REQUEST, so no reference can capture hash notation.
func TestHashLikeReferenceNames(t *testing.T) {
	e := newEnv(t)
	h := e.head("main")
	for _, name := range []string{"deadbeef", "ABCDEF0123456789", "e" + strings.Repeat("0", 63)} {
		for _, typ := range []string{"TAG", "BRANCH"} {
			ne := e.fail(http.MethodPost, "/trees?name="+name+"&type="+typ, reference{Type: "BRANCH", Name: "main", Hash: h},
				http.StatusBadRequest, "BAD_REQUEST")
			if !strings.Contains(ne.Message, "commit hash") {
				t.Fatalf("%s %s: %q does not say why", typ, name, ne.Message)
			}
		}
	}
	// Neither too short nor non-hex names are hash-like.
	for _, name := range []string{"deadbee", "deadbeefx", "beef/cafe0123"} {
		e.ok(http.MethodPost, "/trees?name="+url.QueryEscape(name)+"&type=TAG", reference{Type: "BRANCH", Name: "main", Hash: h}, http.StatusOK, nil)
	}
}

// TestContentKeyLimits: a commit putting a key past the documented limits
// is a 400 that names the limit, and writes nothing.
func TestContentKeyLimits(t *testing.T) {
	e := newEnv(t)
	e.commit("main", "ns", put(namespace("ns"), "ns"))
	before := e.head("main")
	deep := make([]string, 0, 12)
	for i := 0; i < 12; i++ {
		deep = append(deep, strings.Repeat(fmt.Sprint(i%10), 250))
	}
	for _, k := range [][]string{{"ns", strings.Repeat("t", 300)}, {"ns", strings.Repeat("t", 1024)}, deep} {
		ne := e.fail(http.MethodPost, "/trees/"+url.PathEscape("main@"+before)+"/history/commit",
			map[string]any{"commitMeta": map[string]any{"message": "m"}, "operations": []operation{put(table("file:///w/x.json", 1), k...)}},
			http.StatusBadRequest, "BAD_REQUEST")
		if !strings.Contains(ne.Message, "at most") {
			t.Fatalf("message %q does not name the limit", ne.Message)
		}
	}
	if e.head("main") != before {
		t.Fatal("a refused commit moved main")
	}
}

// TestTrailingJSON: every endpoint that takes a body refuses bytes after
// the JSON value with a 400 and changes nothing.
func TestTrailingJSON(t *testing.T) {
	e := newEnv(t)
	e.commit("main", "ns", put(namespace("ns"), "ns"))
	h := e.head("main")
	e.branch("dev", "main")
	ref := fmt.Sprintf(`{"type":"BRANCH","name":"main","hash":%q}`, h)
	commit := `{"commitMeta":{"message":"m"},"operations":[{"type":"PUT","key":{"elements":["ns2"]},"content":{"type":"NAMESPACE","elements":["ns2"]}}]}`
	merge := fmt.Sprintf(`{"fromRefName":"main","fromHash":%q}`, h)
	transplant := fmt.Sprintf(`{"fromRefName":"main","hashesToTransplant":[%q]}`, h)
	for _, tc := range []struct {
		name, method, path, body string
	}{
		{"create reference", http.MethodPost, "/trees?name=trail&type=BRANCH", ref},
		{"assign reference", http.MethodPut, "/trees/" + url.PathEscape("dev@"+h) + "?type=BRANCH", ref},
		{"commit", http.MethodPost, "/trees/" + url.PathEscape("main@"+h) + "/history/commit", commit},
		{"merge", http.MethodPost, "/trees/" + url.PathEscape("dev@"+h) + "/history/merge", merge},
		{"transplant", http.MethodPost, "/trees/" + url.PathEscape("dev@"+h) + "/history/transplant", transplant},
		{"multiple contents", http.MethodPost, "/trees/main/contents", `{"requestedKeys":[{"elements":["ns"]}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			for _, tail := range []string{"]]]}}", "}", "x", " {}", `"s"`} {
				e.fail(tc.method, tc.path, tc.body+tail, http.StatusBadRequest, "BAD_REQUEST")
			}
			e.ok(tc.method, tc.path, tc.body+" \n\t", http.StatusOK, nil) // trailing whitespace is fine
		})
	}
}
