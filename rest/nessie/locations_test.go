package nessie_test

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/versionstore"
)

// locationsEnv is floe as `floe serve` wires it: the Nessie API checks
// metadata locations against the Iceberg facade's warehouse, and metadata
// reads are bounded by maxRead bytes (0: the default).
func locationsEnv(t *testing.T, maxRead int64) (*testEnv, *testserver.Server) {
	t.Helper()
	s := testserver.Start(t, testserver.Options{Catalog: func(c *catalog.Config) { c.MaxMetadataFileBytes = maxRead }})
	return &testEnv{t: t, url: s.URL, store: s.Store}, s
}

// TestCommitLocationOutsideWarehouse is issue 16's defect 1: a Nessie
// commit or a merge's resolvedContent naming a metadata file outside the
// warehouse (a crafted file in /tmp, /etc/passwd, /dev/zero) is a 400
// naming the location and the rule, and nothing is committed.
func TestCommitLocationOutsideWarehouse(t *testing.T) {
	e, s := locationsEnv(t, 0)
	e.commit("main", "ns", put(namespace("db"), "db"))
	crafted := filepath.Join(t.TempDir(), "crafted.metadata.json")
	if err := os.WriteFile(crafted, []byte(`{"format-version":2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{"file://" + crafted, crafted, "file:///etc/passwd", "/etc/passwd", "file:///dev/zero",
		s.Warehouse + "/../../etc/passwd", s.Warehouse + "/%2e%2e/x.json", s.Warehouse + "x/t.json", "s3://bucket/t.json", s.Warehouse} {
		t.Run(loc, func(t *testing.T) {
			e := e.with(t)
			for _, typ := range []string{"ICEBERG_TABLE", "ICEBERG_VIEW"} {
				c := table(loc, 1)
				if typ == "ICEBERG_VIEW" {
					c = &content{Type: typ, MetadataLocation: loc, VersionID: new(int64(1))}
				}
				ne := e.fail(http.MethodPost, "/trees/main@"+e.head("main")+"/history/commit",
					map[string]any{"commitMeta": map[string]any{"message": "m"}, "operations": []operation{put(c, "db", "t")}},
					http.StatusBadRequest, "BAD_REQUEST")
				if !strings.Contains(ne.Message, loc) || !strings.Contains(ne.Message, "inside a warehouse") {
					t.Errorf("%s: message %q names neither the location nor the rule", typ, ne.Message)
				}
			}
		})
	}
	if res := e.do(http.MethodGet, "/api/v2/trees/main/contents/db.t", nil); res.status != http.StatusNotFound {
		t.Errorf("db.t after refused commits: status %d, want 404: %s", res.status, res.body)
	}

	// A merge's resolvedContent enters the target as sent: same rule.
	inside := s.Warehouse + "/db/t/metadata/00000-a.metadata.json"
	e.commit("main", "t", put(table(inside, 1), "db", "t"))
	var c struct{ Content content }
	e.ok(http.MethodGet, "/trees/main/contents/db.t", nil, http.StatusOK, &c)
	e.branch("dev", "main")
	upd := table(s.Warehouse+"/db/t/metadata/00001-b.metadata.json", 2)
	upd.ID = c.Content.ID
	e.commit("dev", "dev", put(upd, "db", "t"))
	main := table(s.Warehouse+"/db/t/metadata/00001-c.metadata.json", 3)
	main.ID = c.Content.ID
	e.commit("main", "main", put(main, "db", "t"))
	e.ok(http.MethodGet, "/trees/main/contents/db.t", nil, http.StatusOK, &c)
	resolved := table("file:///etc/passwd", 4)
	resolved.ID = c.Content.ID
	ne := e.fail(http.MethodPost, "/trees/main@"+e.head("main")+"/history/merge", map[string]any{
		"fromRefName": "dev", "fromHash": e.head("dev"),
		"keyMergeModes": []map[string]any{{"key": key{[]string{"db", "t"}}, "mergeBehavior": "NORMAL",
			"expectedTargetContent": c.Content, "resolvedContent": resolved}},
	}, http.StatusBadRequest, "BAD_REQUEST")
	if !strings.Contains(ne.Message, "file:///etc/passwd") {
		t.Errorf("merge: message %q does not name the location", ne.Message)
	}
}

// TestLoadOfForeignLocation: content that entered the store before
// locations were checked (written here through the store itself) and names
// a file outside the warehouse, a device, a FIFO, a symbolic link or a
// file above the size limit is refused on load, at once, and the answer
// echoes nothing of the file.
func TestLoadOfForeignLocation(t *testing.T) {
	const limit = 1 << 20
	e, s := locationsEnv(t, limit)
	ctx := t.Context()
	e.commit("main", "ns", put(namespace("db"), "db"))
	wh := s.WarehouseDir
	big := filepath.Join(wh, "big.metadata.json")
	if err := os.WriteFile(big, []byte(`{"format-version":2,"x":"`+strings.Repeat("a", 2*limit)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(wh, "fifo.metadata.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(wh, "link.metadata.json")
	if err := os.Symlink("/etc/passwd", link); err != nil {
		t.Fatal(err)
	}
	notJSON := filepath.Join(wh, "plain.metadata.json")
	if err := os.WriteFile(notJSON, []byte("root:x:0:0:secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"passwd": "file:///etc/passwd", "zero": "file:///dev/zero", "big": "file://" + big,
		"fifo": "file://" + fifo, "link": "file://" + link, "notjson": "file://" + notJSON, "dir": "file://" + wh + "/db",
	}
	if err := os.MkdirAll(filepath.Join(wh, "db"), 0o750); err != nil {
		t.Fatal(err)
	}
	for name, loc := range cases {
		ref, err := s.Store.GetRef("main")
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Store.Commit(ctx, versionstore.CommitRequest{Branch: "main", Expected: ref.Head, Meta: versionstore.CommitMeta{Message: name},
			Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"db", name},
				Content: &versionstore.Content{Type: versionstore.IcebergTable, MetadataLocation: loc}}}})
		if err != nil {
			t.Fatal(err)
		}
	}
	for name, loc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/v1/lake/namespaces/db/tables/"+name, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			var body bytes.Buffer
			if _, err := body.ReadFrom(res.Body); err != nil {
				t.Fatal(err)
			}
			if res.StatusCode < 400 {
				t.Fatalf("load of %s: status %d: %s", loc, res.StatusCode, body.String())
			}
			for _, leak := range []string{"root", "secret", "invalid character", "aaaa", `\u0000`} {
				if strings.Contains(body.String(), leak) {
					t.Errorf("load of %s answers %q, which echoes the file's content", loc, body.String())
				}
			}
		})
	}
}
