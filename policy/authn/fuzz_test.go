package authn

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
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

// FuzzTokenForm feeds arbitrary bodies to the OAuth token endpoint
// (POST /v1/oauth/tokens, client-credentials grant). It must never panic
// or answer a 5xx; an error is a 4xx with an OAuth error body; and only the
// one known client with its secret is issued a token.
func FuzzTokenForm(f *testing.F) {
	env := newBenchEnv(f, 0)
	h := env.a.TokenHandler()
	for _, s := range []string{
		"grant_type=client_credentials&client_id=spark&client_secret=s",
		"grant_type=client_credentials&client_id=spark&client_secret=s&scope=catalog",
		"grant_type=client_credentials&client_id=spark&client_secret=wrong",
		"grant_type=client_credentials&client_id=spark&client_id=spark&client_secret=s",
		"grant_type=password&username=a&password=b", "grant_type=client_credentials&scope=%ZZ", "", "%", "a=b;c=d",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		r := httptest.NewRequestWithContext(t.Context(), http.MethodPost, "http://floe.test/v1/oauth/tokens", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var out struct {
			AccessToken string `json:"access_token"`
			Error       string `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("body %q: answer %d %q is not JSON: %v", body, w.Code, w.Body.String(), err)
		}
		switch {
		case w.Code == http.StatusOK:
			form, err := url.ParseQuery(body)
			if err != nil || form.Get("client_id") != "spark" || form.Get("client_secret") != "s" || out.AccessToken == "" {
				t.Fatalf("body %q was issued a token: %s", body, w.Body.String())
			}
		case w.Code >= 400 && w.Code < 500:
			if out.Error == "" {
				t.Fatalf("body %q: %d without an OAuth error: %s", body, w.Code, w.Body.String())
			}
		default:
			t.Fatalf("body %q: status %d: %s", body, w.Code, w.Body.String())
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
