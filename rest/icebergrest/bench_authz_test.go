package icebergrest_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/policy/authn"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/versionstore"
)

// BenchmarkAuthzCommit measures what authentication and authorization
// cost a commit: the same table commits as BenchmarkTableCommit, on a
// users/<principal>/ branch the default policy lets the principal write,
// with authz=off (no token, no policy) and authz=on (a static bearer token
// checked on every request and one default-bundle decision per commit).
// Compare commits/s and cpu-us/op of the two.
func BenchmarkAuthzCommit(b *testing.B) {
	const clients = 8
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("authz=%s/clients=%d", map[bool]string{false: "off", true: "on"}[on], clients), func(b *testing.B) {
			var configure []func(*icebergrest.Deps)
			var header []string
			if on {
				token := "bench-token-" + strconv.FormatInt(time.Now().UnixNano(), 36)
				sum := sha256.Sum256([]byte(token))
				tokens := filepath.Join(b.TempDir(), "tokens.json")
				body := `{"tokens":[{"sha256":"` + hex.EncodeToString(sum[:]) + `","principal":"bench","groups":["ingest"]}]}`
				if err := os.WriteFile(tokens, []byte(body), 0o600); err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				b.Cleanup(cancel)
				auth, err := authn.New(ctx, authn.Config{TokenFile: tokens}, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				engine, err := policy.New(ctx, policy.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = engine.Close() })
				configure = append(configure, func(d *icebergrest.Deps) {
					d.Authenticate = auth.Middleware
					d.Guard = authz.NewGuard(engine, "iceberg", authn.PrincipalOf, nil)
					d.Principal = func(r *http.Request) string { return authn.PrincipalOf(r).ID }
				})
				header = []string{"Authorization", "Bearer " + token}
			}
			s := startBenchServer(b, clients, configure...)
			s.header = header
			if _, err := s.store.CreateRef(b.Context(), versionstore.CreateRefRequest{
				Name: "users/bench/w", Type: versionstore.Branch, Target: versionstore.NoAncestor}); err != nil {
				b.Fatal(err)
			}
			commit, _ := s.tableCommits(b, "/v1/lake@users%2Fbench%2Fw", clients)
			lat := runClients(b, clients, func(ctx context.Context, c int, i int64) (time.Duration, error) {
				return commit(ctx, c, strconv.FormatInt(i, 10))
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			lat.report(b)
		})
	}
}

// BenchmarkAuthzPerRequest isolates what BenchmarkAuthzCommit compares:
// the CPU one commit request spends on authorization, that is the
// authenticating middleware (static bearer token) and the guard's
// decision for a one-table write on a users/ branch, with the engine's
// decision cache (cached, the steady state of repeated commits) and
// without it (uncached, a question never asked before). Set against a
// commit's cpu-us/op in BenchmarkAuthzCommit, it is the relative cost of
// authorization, free of the disk noise that dominates a commit's wall
// time on a shared machine.
func BenchmarkAuthzPerRequest(b *testing.B) {
	token := "bench-token"
	sum := sha256.Sum256([]byte(token))
	tokens := filepath.Join(b.TempDir(), "tokens.json")
	body := `{"tokens":[{"sha256":"` + hex.EncodeToString(sum[:]) + `","principal":"bench","groups":["ingest"]}]}`
	if err := os.WriteFile(tokens, []byte(body), 0o600); err != nil {
		b.Fatal(err)
	}
	auth, err := authn.New(b.Context(), authn.Config{TokenFile: tokens}, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	in := policy.Input{Action: policy.ActionWriteTable, Ref: policy.Ref{Name: "users/bench/w", Type: policy.RefBranch},
		Contents: []policy.Content{{Key: []string{"bench", "t00"}, Type: policy.TypeTable, Change: policy.ChangeUpdate,
			Iceberg: &policy.IcebergChange{Updates: []string{"set-properties"}}}}}
	for _, cache := range []struct {
		name string
		size int
	}{{"cached", 0}, {"uncached", -1}} {
		b.Run(cache.name, func(b *testing.B) {
			engine, err := policy.New(b.Context(), policy.Options{DecisionCacheSize: cache.size})
			if err != nil {
				b.Fatal(err)
			}
			defer engine.Close()
			guard := authz.NewGuard(engine, "iceberg", authn.PrincipalOf, nil)
			var checkErr error
			h := auth.Middleware(func(http.ResponseWriter, *http.Request, error) { checkErr = errors.New("not authenticated") })(
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { checkErr = guard.Check(r, in) }))
			req := httptest.NewRequest(http.MethodPost, "/v1/lake@users%2Fbench%2Fw/namespaces/bench/tables/t00", nil)
			req.Header.Set("Authorization", "Bearer "+token)
			w := httptest.NewRecorder()
			cpu := startCPU()
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, req)
				if checkErr != nil {
					b.Fatal(checkErr)
				}
			}
			cpu.report(b, b.N)
		})
	}
}
