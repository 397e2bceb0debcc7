package authn

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/prometheus/client_golang/prometheus"
)

// benchEnv is an authenticator with every source on, and one valid
// credential of each kind.
type benchEnv struct {
	a                         *Authenticator
	static, jwtToken, oauthTk string
}

func newBenchEnv(tb testing.TB, extraTokens int) benchEnv {
	tb.Helper()
	dir := tb.TempDir()
	entries := []tokenEntry{{SHA256: HashSecret("fuzz-known-token"), Principal: "alice"}}
	for i := range extraTokens {
		entries = append(entries, tokenEntry{SHA256: HashSecret("t" + strings.Repeat("x", i)), Principal: "p"})
	}
	tokens := filepath.Join(dir, "tokens.json")
	writeTokenFile(tb, tokens, entries...)
	clients := filepath.Join(dir, "clients.json")
	writeClientsFile(tb, clients, clientEntry{ClientID: "spark", SecretSHA256: HashSecret("s"), Principal: "spark-etl"})
	key := newSigningKey(tb, jwa.RS256(), "rsa-1")
	jwks := writeFile(tb, dir, "jwks.json", jwksJSON(tb, key))
	clock := newClock()
	a, err := New(tb.Context(), Config{
		TokenFile: tokens,
		JWT:       JWTConfig{JWKSFile: jwks, Issuers: []string{"https://idp.test"}, Audiences: []string{"floe-api"}},
		OAuth:     OAuthConfig{ClientsFile: clients},
		Now:       clock.Now,
	}, nil, prometheus.NewRegistry())
	if err != nil {
		tb.Fatal(err)
	}
	oauthTk, err := a.oauth.issue((*a.oauth.clients.Load())[0], "")
	if err != nil {
		tb.Fatal(err)
	}
	return benchEnv{a: a, static: "fuzz-known-token", jwtToken: validClaims().sign(tb, key), oauthTk: oauthTk}
}

// FuzzAuthenticate feeds arbitrary Authorization headers. It must never
// panic, and only the known credentials may authenticate.
func FuzzAuthenticate(f *testing.F) {
	env := newBenchEnv(f, 0)
	for _, s := range []string{
		"", "Bearer", "Bearer ", "bearer fuzz-known-token", "Bearer fuzz-known-token", "Basic Zm9vOmJhcg==",
		"Bearer " + env.jwtToken, "Bearer " + env.oauthTk, "Bearer a.b.c", "Bearer ..", "Bearer e30.e30.",
		"Bearer eyJhbGciOiJub25lIn0.eyJpc3MiOiJmbG9lIn0.", "Bearer " + env.jwtToken + "x",
		"Bearer eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOjF9.AA",
	} {
		f.Add(s)
	}
	known := map[string]bool{env.static: true, env.jwtToken: true, env.oauthTk: true}
	f.Fuzz(func(t *testing.T, header string) {
		r, _ := http.NewRequest(http.MethodGet, "http://floe.test/", nil)
		r.Header["Authorization"] = []string{header}
		p, err := env.a.Authenticate(t.Context(), r)
		if err != nil {
			return
		}
		scheme, token, _ := strings.Cut(header, " ")
		if !strings.EqualFold(scheme, "bearer") || !known[strings.TrimLeft(token, " ")] {
			t.Fatalf("header %q authenticated as %+v", header, p)
		}
		if p.ID == "" {
			t.Fatalf("header %q authenticated with an empty ID", header)
		}
	})
}

func BenchmarkAuthenticate(b *testing.B) {
	env := newBenchEnv(b, 100)
	for _, bc := range []struct{ name, token string }{
		{"static-101-tokens", env.static},
		{"jwt-RS256", env.jwtToken},
		{"oauth-EdDSA", env.oauthTk},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r, _ := http.NewRequest(http.MethodGet, "http://floe.test/", nil)
			r.Header.Set("Authorization", "Bearer "+bc.token)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := env.a.Authenticate(b.Context(), r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
