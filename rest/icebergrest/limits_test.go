package icebergrest_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/versionstore"
)

// TestNameAndLocationLimits: names past the documented limits and bad
// locations are a 400 BadRequestException naming the limit, before
// anything is written; today's file system errors were 500s.
func TestNameAndLocationLimits(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.createTable("lake", "ns", "t")
	e.ok(http.MethodPost, "/v1/lake/namespaces/ns/views", viewBody("v", "select 1"), http.StatusOK, nil)
	deep := make([]string, 8) // 8 × 250 bytes: a namespace within the limits
	for i := range deep {
		deep[i] = strings.Repeat(fmt.Sprint(i), 250)
		e.createNamespace("lake", deep[:i+1]...)
	}
	before := snapshotFiles(t, e.whDir)

	long := func(n int) string { return strings.Repeat("n", n) }
	tooDeep := make([]string, 20) // 20 × 250 bytes: longer than a path may be
	for i := range tooDeep {
		tooDeep[i] = strings.Repeat(fmt.Sprint(i%10), 250)
	}
	tables := "/v1/lake/namespaces/ns/tables"
	deepTables := "/v1/lake/namespaces/" + url.PathEscape(strings.Join(deep, "\x1f")) + "/tables"
	wh := e.wh
	setLocation := func(loc string) string {
		return commitBody("", fmt.Sprintf(`{"action":"set-location","location":%q}`, loc))
	}
	for _, tc := range []struct {
		name, method, path, body, msg string
	}{
		{"table name 300 bytes", http.MethodPost, tables, createTableBody(long(300), ""), "at most"},
		{"table name 1024 bytes", http.MethodPost, tables, createTableBody(long(1024), ""), "at most"},
		{"table name past the directory limit", http.MethodPost, tables, createTableBody(long(220), ""), "at most 218"},
		{"view name 300 bytes", http.MethodPost, "/v1/lake/namespaces/ns/views", viewBody(long(300), "select 1"), "at most"},
		{"namespace element 300 bytes", http.MethodPost, "/v1/lake/namespaces", fmt.Sprintf(`{"namespace":[%q]}`, long(300)), "at most 255"},
		{"namespace too long in all", http.MethodPost, "/v1/lake/namespaces", `{"namespace":["` + strings.Join(tooDeep, `","`) + `"]}`, "at most 2048"},
		{"table key too long in all", http.MethodPost, deepTables, createTableBody(long(200), ""), "at most 2048"},
		{"rename to 300 bytes", http.MethodPost, "/v1/lake/tables/rename",
			fmt.Sprintf(`{"source":{"namespace":["ns"],"name":"t"},"destination":{"namespace":["ns"],"name":%q}}`, long(300)), "at most"},
		{"location with %00", http.MethodPost, tables, createTableBody("x", fmt.Sprintf(`,"location":%q`, wh+"/ns/a%00b")), "control character"},
		{"location with a raw control character", http.MethodPost, tables, createTableBody("x", `,"location":"`+wh+`/ns/a\u0001b"`), "control character"},
		{"location with %1f", http.MethodPost, tables, createTableBody("x", fmt.Sprintf(`,"location":%q`, wh+"/ns/a%1Fb")), "control character"},
		{"location not a URL", http.MethodPost, tables, createTableBody("x", fmt.Sprintf(`,"location":%q`, wh+"/ns/a%zzb")), "not a valid URL"},
		{"location element 300 bytes", http.MethodPost, tables, createTableBody("x", fmt.Sprintf(`,"location":%q`, wh+"/ns/"+long(300))), "at most 255"},
		{"metadata path with %00", http.MethodPost, tables, createTableBody("x", fmt.Sprintf(`,"properties":{"write.metadata.path":%q}`, wh+"/ns/m%00")), "control character"},
		{"set-location with %00", http.MethodPost, tables + "/t", setLocation(wh + "/ns/t%00"), "control character"},
		{"set-location too long", http.MethodPost, tables + "/t", setLocation(wh + "/" + strings.Repeat("d/", 1600)), "at most 3072"},
		{"view location with %00", http.MethodPost, "/v1/lake/namespaces/ns/views/v", fmt.Sprintf(`{"updates":[{"action":"set-location","location":%q}]}`, wh+"/ns/v%00"), "control character"},
		{"create view location with %00", http.MethodPost, "/v1/lake/namespaces/ns/views",
			strings.Replace(viewBody("v2", "select 1"), `"name":"v2",`, fmt.Sprintf(`"name":"v2","location":%q,`, wh+"/ns/v%00"), 1), "control character"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.with(t).do(tc.method, tc.path, tc.body)
			checkError(t, r, http.StatusBadRequest, "BadRequestException", "…"+tc.msg)
		})
	}
	if after := snapshotFiles(t, e.whDir); len(after) != len(before) {
		t.Fatalf("refused requests wrote %d files", len(after)-len(before))
	}
	// At the limits, all is well.
	e.ok(http.MethodPost, tables, createTableBody(long(218), ""), http.StatusOK, nil)
	e.ok(http.MethodPost, "/v1/lake/namespaces", fmt.Sprintf(`{"namespace":[%q]}`, long(255)), http.StatusOK, nil)
}

// TestHashWarehouseNeverNamesATag: a tag named like main's head cannot be
// created, so lake@<hash> always shows that commit.
func TestHashWarehouseNeverNamesATag(t *testing.T) {
	e := newEnv(t)
	e.createNamespace("lake", "ns")
	e.createTable("lake", "ns", "t")
	// Find a head whose hash starts with a letter, so it is a valid name.
	main, _ := e.store.GetRef(versionstore.DefaultBranch)
	for i := 0; main.Head.String()[0] < 'a'; i++ {
		e.createTable("lake", "ns", fmt.Sprint("t", i))
		main, _ = e.store.GetRef(versionstore.DefaultBranch)
	}
	for _, name := range []string{main.Head.String(), main.Head.String()[:8]} {
		_, err := e.store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: name, Type: versionstore.Tag, Target: versionstore.NoAncestor})
		if err == nil {
			t.Fatalf("tag %s created", name)
		}
		r := e.do(http.MethodGet, "/v1/"+url.PathEscape("lake@"+name)+"/namespaces/ns/tables/t", nil)
		if r.status != http.StatusOK {
			t.Fatalf("lake@%s: status %d: %s", name, r.status, r.body)
		}
	}
}
