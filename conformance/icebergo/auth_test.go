package icebergo

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/policy/authn"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/versionstore"
)

// withAuth turns on authentication (one OAuth client, "etl", a member of
// group ingest) and authorization with floe's default policy, and serves
// the client-credentials endpoint.
func withAuth(t *testing.T) floeOption {
	t.Helper()
	sum := sha256.Sum256([]byte("etl-secret"))
	clients := filepath.Join(t.TempDir(), "clients.json")
	body := `{"clients":[{"client_id":"etl","secret_sha256":"` + hex.EncodeToString(sum[:]) + `","principal":"etl-bot","groups":["ingest"]}]}`
	if err := os.WriteFile(clients, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return func(o *testserver.Options) {
		o.Security = &assemble.Security{
			Authn:  assemble.Authn{OAuth: authn.OAuthConfig{ClientsFile: clients}},
			Policy: &assemble.Policy{},
		}
	}
}

// TestOAuthAndPolicy drives floe's security with iceberg-go: it gets a
// token through the client-credentials flow, writes Arrow data on a branch
// the policy lets its group write, and gets iceberg-go's own errors for a
// write the policy refuses, a wrong secret and no credentials.
func TestOAuthAndPolicy(t *testing.T) {
	t.Parallel()
	f := startFloe(t, withAuth(t))
	ctx := t.Context()
	if _, err := f.store.CreateRef(ctx, versionstore.CreateRefRequest{Name: "ingest/daily", Type: versionstore.Branch, Target: versionstore.NoAncestor}); err != nil {
		t.Fatal(err)
	}
	creds := rest.WithCredential("etl:etl-secret")

	ingest := f.catalog(t, "lake@ingest/daily", creds)
	if err := ingest.CreateNamespace(ctx, catalog.ToIdentifier("raw"), nil); err != nil {
		t.Fatalf("create namespace on ingest/daily: %v", err)
	}
	tbl := createTable(t, ingest, catalog.ToIdentifier("raw", "events"))
	want := []row{{1, "eu", 2.5}, {2, "us", 4}}
	tbl = appendRows(t, tbl, want)
	rowsEqual(t, scanRows(t, tbl, ""), want)

	// main is written only through merges by publishers: iceberg-go
	// gets ForbiddenException, with the policy's reason.
	mainCat := f.catalog(t, "lake", creds)
	err := mainCat.CreateNamespace(ctx, catalog.ToIdentifier("raw"), nil)
	if !errors.Is(err, rest.ErrForbidden) || !strings.Contains(err.Error(), "main is written only through merges") {
		t.Fatalf("create namespace on main: %v, want ErrForbidden with the policy's reason", err)
	}
	if _, err := mainCat.ListNamespaces(ctx, nil); err != nil {
		t.Fatalf("reads on main are allowed: %v", err)
	}

	// A wrong secret gets no token; no credentials get no catalog.
	if _, err := rest.NewCatalog(ctx, "floe", "http://"+f.addr, rest.WithWarehouseLocation("lake"), rest.WithCredential("etl:wrong")); err == nil {
		t.Fatal("a wrong client secret opened a catalog")
	}
	if _, err := rest.NewCatalog(ctx, "floe", "http://"+f.addr, rest.WithWarehouseLocation("lake")); !errors.Is(err, rest.ErrUnauthorized) {
		t.Fatalf("no credentials: %v, want ErrUnauthorized", err)
	}
}
