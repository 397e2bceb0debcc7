package icebergrest_test

import (
	"net/http"
	"net/url"
	"testing"
)

// createWithPaths creates table ns.name on prefix as alice with
// write.data.path and write.metadata.path set, asking for delegated
// access; its status and body.
func createWithPaths(l *signLake, prefix, name, dataPath, metadataPath string) (int, []byte) {
	l.t.Helper()
	status, body, _ := l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(prefix)+"/namespaces/ns/tables",
		createTableBody(name, `,"properties":{"write.data.path":"`+dataPath+`","write.metadata.path":"`+metadataPath+`"}`),
		"X-Iceberg-Access-Delegation", "vended-credentials,remote-signing")
	return status, body
}

// TestS3RemoteSigningScopeFollowsWritePaths: a table whose write.data.path and
// write.metadata.path lie elsewhere in the warehouse gets those signed
// too, and nothing beside them; a path outside the warehouse widens
// nothing.
func TestS3RemoteSigningScopeFollowsWritePaths(t *testing.T) {
	l := newSignLake(t)
	const branch = "lake@users/alice/dev"
	if status, body, _ := l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(branch)+"/namespaces", `{"namespace":["ns"]}`); status != http.StatusOK {
		t.Fatalf("create namespace: %d %s", status, body)
	}
	wh := "s3://" + l.bucket + "/wh"
	if status, body := createWithPaths(l, branch, "t1", wh+"/shared/t1-data", wh+"/shared/t1-meta"); status != http.StatusOK {
		t.Fatalf("create t1: %d %s", status, body)
	}
	outside := "s3://" + l.bucket + "/outside/t2-data"
	if status, body := createWithPaths(l, branch, "t2", outside, wh+"/shared/t2-meta"); status != http.StatusOK {
		t.Fatalf("create t2: %d %s", status, body)
	}
	sign := "v1/" + url.PathEscape(branch) + "/namespaces/ns/tables/"
	payload := []byte("parquet bytes")
	for _, tc := range []struct {
		name, table, loc string
		floe             int
	}{
		{"t1's data path", "t1", wh + "/shared/t1-data/00000-0-a.parquet", 200},
		{"t1's metadata path", "t1", wh + "/shared/t1-meta/00001-x.metadata.json", 200},
		{"beside t1's data path", "t1", wh + "/shared/t1-data-evil/f.parquet", 403},
		{"t2's metadata path, for t1", "t1", wh + "/shared/t2-meta/f.json", 403},
		{"t2's data path outside the warehouse", "t2", outside + "/00000-0-a.parquet", 403},
		{"t2's metadata path", "t2", wh + "/shared/t2-meta/00001-x.metadata.json", 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := l.with(t)
			f, s, out := l.signed("alice", sign+tc.table+"/sign", http.MethodPut, l.uriOf(tc.loc), payload, nil)
			if f != tc.floe || f == 200 && s != 200 {
				t.Fatalf("PUT %s for %s: floe %d, S3 %d %s; want floe %d", tc.loc, tc.table, f, s, out, tc.floe)
			}
		})
	}
}

// TestS3VendedCredentialsScopeFollowsWritePaths: vended credentials cover a table's
// write.data.path and write.metadata.path inside the warehouse, and
// nothing beside them; a path outside the warehouse widens nothing.
func TestS3VendedCredentialsScopeFollowsWritePaths(t *testing.T) {
	l := newVendLake(t, vendOptions{})
	const branch = "lake@users/alice/dev"
	if status, body, _ := l.call("alice", http.MethodPost, "/v1/"+url.PathEscape(branch)+"/namespaces", `{"namespace":["ns"]}`); status != http.StatusOK {
		t.Fatalf("create namespace: %d %s", status, body)
	}
	wh := "s3://" + l.bucket + "/wh"
	outside := "s3://" + l.bucket + "/outside/t1-data"
	if status, body := createWithPaths(l, branch, "t1", wh+"/shared/t1-data", wh+"/shared/t1-meta"); status != http.StatusOK {
		t.Fatalf("create t1: %d %s", status, body)
	}
	if status, body := createWithPaths(l, branch, "t2", outside, wh+"/shared/t2-meta"); status != http.StatusOK {
		t.Fatalf("create t2: %d %s", status, body)
	}
	status, body, v := loadVended(l, "alice", branch, "t1", "/credentials")
	if status != http.StatusOK {
		t.Fatalf("credentials: %d %s", status, body)
	}
	keys := v.keys(t)
	_, _, v2 := loadVended(l, "alice", branch, "t2", "/credentials")
	keys2 := v2.keys(t)
	payload := []byte("parquet bytes")
	for _, tc := range []struct {
		name, loc string
		want      int
	}{
		{"t1's data path", wh + "/shared/t1-data/00000-0-a.parquet", 200},
		{"t1's metadata path", wh + "/shared/t1-meta/00001-x.metadata.json", 200},
		{"beside t1's data path", wh + "/shared/t1-data-evil/f.parquet", 403},
		{"t2's metadata path", wh + "/shared/t2-meta/f.json", 403},
	} {
		t.Run("t1's credentials: "+tc.name, func(t *testing.T) {
			if s, out := s3With(t, keys, http.MethodPut, l.uriOf(tc.loc), payload); s != tc.want {
				t.Fatalf("PUT %s: %d %s, want %d", tc.loc, s, out, tc.want)
			}
		})
	}
	t.Run("t2's credentials: its data path outside the warehouse", func(t *testing.T) {
		if s, out := s3With(t, keys2, http.MethodPut, l.uriOf(outside+"/f.parquet"), payload); s != http.StatusForbidden {
			t.Fatalf("PUT outside the warehouse: %d %s", s, out)
		}
	})
}
