package icebergrest_test

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/versionstore"
)

func TestNamespaces(t *testing.T) {
	e := newEnv(t)
	var created struct {
		Namespace  []string          `json:"namespace"`
		Properties map[string]string `json:"properties"`
	}
	e.ok(http.MethodPost, "/v1/lake/namespaces", `{"namespace":["ns"],"properties":{"owner":"a","keep":"k"}}`, http.StatusOK, &created)
	if !slices.Equal(created.Namespace, []string{"ns"}) || created.Properties["owner"] != "a" {
		t.Fatalf("created %+v", created)
	}
	e.createNamespace("lake", "ns", "child")
	e.createNamespace("lake", "ns", "child", "grandchild")
	e.createNamespace("lake", "empty")
	e.createNamespace("lake", "with.dot")
	e.createTable("lake", "ns", "t1")

	var loaded struct {
		Namespace  []string          `json:"namespace"`
		Properties map[string]string `json:"properties"`
	}
	e.ok(http.MethodGet, "/v1/lake/namespaces/ns%1Fchild", nil, http.StatusOK, &loaded)
	if !slices.Equal(loaded.Namespace, []string{"ns", "child"}) || loaded.Properties == nil {
		t.Fatalf("loaded %+v", loaded)
	}
	e.ok(http.MethodHead, "/v1/lake/namespaces/ns%1Fchild%1Fgrandchild", nil, http.StatusNoContent, nil)
	e.ok(http.MethodHead, "/v1/lake/namespaces/with.dot", nil, http.StatusNoContent, nil)

	t.Run("list", func(t *testing.T) {
		e := e.with(t)
		list := func(query string) (names [][]string, next string) {
			var res struct {
				Namespaces [][]string `json:"namespaces"`
				Next       *string    `json:"next-page-token"`
			}
			e.ok(http.MethodGet, "/v1/lake/namespaces"+query, nil, http.StatusOK, &res)
			if res.Next != nil {
				next = *res.Next
			}
			return res.Namespaces, next
		}
		all, next := list("")
		want := [][]string{{"empty"}, {"ns"}, {"with.dot"}}
		if !slices.EqualFunc(all, want, slices.Equal) || next != "" {
			t.Fatalf("top level %v next %q, want %v", all, next, want)
		}
		children, _ := list("?parent=ns")
		if !slices.EqualFunc(children, [][]string{{"ns", "child"}}, slices.Equal) {
			t.Fatalf("children of ns %v", children)
		}
		grand, _ := list("?parent=" + url.QueryEscape("ns\x1fchild"))
		if !slices.EqualFunc(grand, [][]string{{"ns", "child", "grandchild"}}, slices.Equal) {
			t.Fatalf("children of ns.child %v", grand)
		}
		// Paging: two at a time.
		var paged [][]string
		token := ""
		for i := 0; ; i++ {
			page, next := list("?pageSize=2&pageToken=" + url.QueryEscape(token))
			paged = append(paged, page...)
			if next == "" {
				break
			}
			if len(page) != 2 || i > 3 {
				t.Fatalf("page %d: %v next %q", i, page, next)
			}
			token = next
		}
		if !slices.EqualFunc(paged, want, slices.Equal) {
			t.Fatalf("paged %v, want %v", paged, want)
		}
	})

	t.Run("properties", func(t *testing.T) {
		e := e.with(t)
		var res struct {
			Updated []string `json:"updated"`
			Removed []string `json:"removed"`
			Missing []string `json:"missing"`
		}
		e.ok(http.MethodPost, "/v1/lake/namespaces/ns/properties",
			`{"updates":{"owner":"b","new":"n"},"removals":["keep","absent"]}`, http.StatusOK, &res)
		if !slices.Equal(res.Updated, []string{"new", "owner"}) || !slices.Equal(res.Removed, []string{"keep"}) || !slices.Equal(res.Missing, []string{"absent"}) {
			t.Fatalf("summary %+v", res)
		}
		e.ok(http.MethodGet, "/v1/lake/namespaces/ns", nil, http.StatusOK, &loaded)
		if fmt.Sprint(loaded.Properties) != "map[location:"+e.wh+"/ns new:n owner:b]" {
			t.Fatalf("properties %v", loaded.Properties)
		}
	})

	for _, tc := range []struct {
		name, method, path string
		body               any
		status             int
		typ, msg           string
	}{
		{"create exists", "POST", "/v1/lake/namespaces", `{"namespace":["ns"]}`, 409, "AlreadyExistsException", "Namespace already exists: ns"},
		{"create over table", "POST", "/v1/lake/namespaces", `{"namespace":["ns","t1"]}`, 409, "AlreadyExistsException", "…a table with the same name exists"},
		{"create no parent", "POST", "/v1/lake/namespaces", `{"namespace":["missing","child"]}`, 404, "NoSuchNamespaceException", "Namespace does not exist: missing"},
		{"create empty", "POST", "/v1/lake/namespaces", `{"namespace":[]}`, 400, "BadRequestException", ""},
		{"create empty level", "POST", "/v1/lake/namespaces", `{"namespace":["a",""]}`, 400, "BadRequestException", "invalid namespace"},
		{"create malformed", "POST", "/v1/lake/namespaces", `{"namespace":["a"]`, 400, "BadRequestException", "malformed JSON"},
		{"create wrong type", "POST", "/v1/lake/namespaces", `{"namespace":"a"}`, 400, "BadRequestException", "malformed JSON"},
		{"create no body", "POST", "/v1/lake/namespaces", nil, 400, "BadRequestException", "the request body is empty"},
		{"load missing", "GET", "/v1/lake/namespaces/missing", nil, 404, "NoSuchNamespaceException", "Namespace does not exist: missing"},
		{"load table key", "GET", "/v1/lake/namespaces/ns%1Ft1", nil, 404, "NoSuchNamespaceException", "Namespace does not exist: ns.t1"},
		{"head missing", "HEAD", "/v1/lake/namespaces/missing", nil, 404, "", ""},
		{"list missing parent", "GET", "/v1/lake/namespaces?parent=missing", nil, 404, "NoSuchNamespaceException", "Namespace does not exist: missing"},
		{"list bad page size", "GET", "/v1/lake/namespaces?pageSize=0", nil, 400, "BadRequestException", "pageSize"},
		{"list bad token", "GET", "/v1/lake/namespaces?pageToken=%21%21", nil, 400, "BadRequestException", "invalid pageToken"},
		{"properties both", "POST", "/v1/lake/namespaces/ns/properties", `{"updates":{"a":"1"},"removals":["a"]}`, 422, "UnprocessableEntityException", "…[a]"},
		{"properties missing ns", "POST", "/v1/lake/namespaces/missing/properties", `{"updates":{"a":"1"}}`, 404, "NoSuchNamespaceException", "Namespace does not exist: missing"},
		{"properties malformed", "POST", "/v1/lake/namespaces/ns/properties", `{"updates":[1]}`, 400, "BadRequestException", "malformed JSON"},
		{"drop with table", "DELETE", "/v1/lake/namespaces/ns%1Fchild", nil, 409, "NamespaceNotEmptyException", "Namespace not empty: ns.child"},
		{"drop with child", "DELETE", "/v1/lake/namespaces/ns", nil, 409, "NamespaceNotEmptyException", "…is not empty"},
		{"drop missing", "DELETE", "/v1/lake/namespaces/missing", nil, 404, "NoSuchNamespaceException", "Namespace does not exist: missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := e.with(t)
			checkError(t, e.do(tc.method, tc.path, tc.body), tc.status, tc.typ, tc.msg)
		})
	}

	e.ok(http.MethodDelete, "/v1/lake/namespaces/empty", nil, http.StatusNoContent, nil)
	checkError(t, e.do(http.MethodHead, "/v1/lake/namespaces/empty", nil), 404, "", "")
	e.ok(http.MethodDelete, "/v1/lake/namespaces/ns%1Fchild%1Fgrandchild", nil, http.StatusNoContent, nil)
	e.ok(http.MethodDelete, "/v1/lake/namespaces/ns%1Fchild", nil, http.StatusNoContent, nil)
	e.ok(http.MethodDelete, "/v1/lake/namespaces/ns/tables/t1", nil, http.StatusNoContent, nil)
	e.ok(http.MethodDelete, "/v1/lake/namespaces/ns", nil, http.StatusNoContent, nil)
}

// TestOddNames uses names with characters that need escaping in paths:
// they round-trip, and default locations stay one directory per level.
func TestOddNames(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "a/b")
	e.createNamespace("lake", "a/b", "..")
	e.ok(http.MethodHead, "/v1/lake/namespaces/a%2Fb", nil, http.StatusNoContent, nil)
	e.ok(http.MethodHead, "/v1/lake/namespaces/a%2Fb%1F..", nil, http.StatusNoContent, nil)
	var res loadTableResult
	e.ok(http.MethodPost, "/v1/lake/namespaces/a%2Fb%1F../tables", createTableBody("t x/y", ""), http.StatusOK, &res)
	loc := res.Metadata["location"].(string)
	if !strings.HasPrefix(loc, e.wh+"/a_b/__/t_x_y-") {
		t.Fatalf("default location %q", loc)
	}
	e.ok(http.MethodHead, "/v1/lake/namespaces/a%2Fb%1F../tables/t%20x%2Fy", nil, http.StatusNoContent, nil)
	var list struct {
		Namespaces [][]string `json:"namespaces"`
	}
	e.ok(http.MethodGet, "/v1/lake/namespaces?parent="+url.QueryEscape("a/b"), nil, http.StatusOK, &list)
	if len(list.Namespaces) != 1 || !slices.Equal(list.Namespaces[0], []string{"a/b", ".."}) {
		t.Fatalf("namespaces %v", list.Namespaces)
	}
}

// TestListingSkipsDeepKeys lists a namespace whose child namespaces hold
// many tables: only direct children come back, in order, across pages.
func TestListingSkipsDeepKeys(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "db")
	var want []string
	for i := range 5 {
		sub := fmt.Sprintf("s%d", i)
		e.createNamespace("lake", "db", sub)
		for j := range 3 {
			e.createTable("lake", "db%1F"+sub, fmt.Sprintf("deep%d", j))
		}
		name := fmt.Sprintf("t%d", i)
		e.createTable("lake", "db", name)
		want = append(want, name)
	}
	var got []string
	token := ""
	for {
		var res struct {
			Identifiers []struct {
				Namespace []string `json:"namespace"`
				Name      string   `json:"name"`
			} `json:"identifiers"`
			Next string `json:"next-page-token"`
		}
		e.ok(http.MethodGet, "/v1/lake/namespaces/db/tables?pageSize=2&pageToken="+token, nil, http.StatusOK, &res)
		for _, id := range res.Identifiers {
			if !slices.Equal(id.Namespace, []string{"db"}) {
				t.Fatalf("identifier in namespace %v", id.Namespace)
			}
			got = append(got, id.Name)
		}
		if res.Next == "" {
			break
		}
		token = url.QueryEscape(res.Next)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("tables %v, want %v", got, want)
	}
	var all struct {
		Identifiers []any `json:"identifiers"`
		Next        *string
	}
	e.ok(http.MethodGet, "/v1/lake/namespaces/db/tables", nil, http.StatusOK, &all)
	if len(all.Identifiers) != 5 {
		t.Fatalf("unpaged listing has %d tables", len(all.Identifiers))
	}
	checkError(t, e.do(http.MethodGet, "/v1/lake/namespaces/missing/tables", nil), 404, "NoSuchNamespaceException", "Namespace does not exist: missing")
}

// TestNamespaceLocation: a namespace that sets no location reports the
// folder floe puts its tables in, without storing it, and a table staged
// at a location derived from it (as Trino derives one) is created there.
func TestNamespaceLocation(t *testing.T) {
	e := newEnv(t)
	type nsAnswer struct {
		Namespace  []string          `json:"namespace"`
		Properties map[string]string `json:"properties"`
	}
	var created, loaded, nested, own nsAnswer
	e.ok(http.MethodPost, "/v1/lake/namespaces", `{"namespace":["sales"],"properties":{"owner":"a"}}`, http.StatusOK, &created)
	if created.Properties["location"] != e.wh+"/sales" || created.Properties["owner"] != "a" {
		t.Fatalf("create answered properties %v, want owner and location %s/sales", created.Properties, e.wh)
	}
	e.ok(http.MethodGet, "/v1/lake/namespaces/sales", nil, http.StatusOK, &loaded)
	if fmt.Sprint(loaded.Properties) != fmt.Sprint(created.Properties) {
		t.Fatalf("load answered %v, create %v", loaded.Properties, created.Properties)
	}
	e.createNamespace("lake", "sales", "eu west")
	e.ok(http.MethodGet, "/v1/lake/namespaces/sales%1Feu%20west", nil, http.StatusOK, &nested)
	if got, want := nested.Properties["location"], e.wh+"/sales/eu_west"; got != want {
		t.Fatalf("nested namespace location %q, want %q", got, want)
	}
	// A location the namespace sets is its own, reported as set.
	e.ok(http.MethodPost, "/v1/lake/namespaces", `{"namespace":["own"],"properties":{"location":"`+e.wh+`/elsewhere"}}`, http.StatusOK, &own)
	if own.Properties["location"] != e.wh+"/elsewhere" {
		t.Fatalf("own location answered as %v", own.Properties)
	}

	// Reported, never stored: the store (and so the Nessie API and a merge)
	// sees only what clients set, and removing it finds nothing to remove.
	main, err := e.store.GetRef(versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := e.store.GetContent(t.Context(), main.Head, versionstore.ContentKey{"sales"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := stored.Properties["location"]; ok {
		t.Fatalf("the reported location was stored: %v", stored.Properties)
	}
	var summary struct {
		Removed []string `json:"removed"`
		Missing []string `json:"missing"`
	}
	e.ok(http.MethodPost, "/v1/lake/namespaces/sales/properties", `{"removals":["location"]}`, http.StatusOK, &summary)
	if len(summary.Removed) != 0 || !slices.Equal(summary.Missing, []string{"location"}) {
		t.Fatalf("removing the reported location: %+v", summary)
	}

	// Trino's create: the table's location is the namespace's plus a unique
	// folder, staged (nothing written), then committed with assert-create.
	tableLoc := loaded.Properties["location"] + "/orders-0d1f5b"
	var staged loadTableResult
	e.ok(http.MethodPost, "/v1/lake/namespaces/sales/tables",
		createTableBody("orders", `,"stage-create":true,"location":"`+tableLoc+`"`), http.StatusOK, &staged)
	if staged.Metadata["location"] != tableLoc {
		t.Fatalf("staged table location %v, want %s", staged.Metadata["location"], tableLoc)
	}
	if _, err := os.Stat(fileURLPath(t, tableLoc)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the staged table's folder exists before its commit (Trino refuses a non-empty location): %v", err)
	}
	body := commitBody(`{"type":"assert-create"}`, `
		{"action":"assign-uuid","uuid":"`+staged.Metadata["table-uuid"].(string)+`"},
		{"action":"upgrade-format-version","format-version":2},
		{"action":"add-schema","schema":`+schemaJSON+`},
		{"action":"set-current-schema","schema-id":-1},
		{"action":"add-spec","spec":{"spec-id":0,"fields":[]}},
		{"action":"set-default-spec","spec-id":-1},
		{"action":"add-sort-order","sort-order":{"order-id":0,"fields":[]}},
		{"action":"set-default-sort-order","sort-order-id":-1},
		{"action":"set-location","location":"`+tableLoc+`"}`)
	var res loadTableResult
	e.ok(http.MethodPost, "/v1/lake/namespaces/sales/tables/orders", body, http.StatusOK, &res)
	if res.Metadata["location"] != tableLoc || !strings.HasPrefix(*res.MetadataLocation, tableLoc+"/metadata/") {
		t.Fatalf("created at %v with metadata %v, want %s", res.Metadata["location"], *res.MetadataLocation, tableLoc)
	}
}
