package authn

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/policy"
)

func TestStaticToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.json")
	writeTokenFile(t, path,
		tokenEntry{SHA256: HashSecret("alice-token"), Principal: "alice", Groups: []string{"publishers"}},
		tokenEntry{SHA256: HashSecret("carol-token"), Principal: "carol"},
	)
	logs := &logBuffer{}
	reg := prometheus.NewRegistry()
	a, err := New(t.Context(), Config{TokenFile: path}, debugLogger(logs), reg)
	if err != nil {
		t.Fatal(err)
	}
	alice := policy.Principal{ID: "alice", Groups: []string{"publishers"}}
	tests := []struct {
		name  string
		authz []string
		want  *policy.Principal
	}{
		{"ok", []string{"Bearer alice-token"}, &alice},
		{"scheme is case-insensitive", []string{"bEARER alice-token"}, &alice},
		{"no groups", []string{"Bearer carol-token"}, &policy.Principal{ID: "carol", Groups: []string{}}},
		{"unknown token", []string{"Bearer mallory-token"}, nil},
		{"token is case-sensitive", []string{"Bearer ALICE-TOKEN"}, nil},
		{"wrong scheme", []string{"Basic alice-token"}, nil},
		{"no scheme", []string{"alice-token"}, nil},
		{"empty token", []string{"Bearer "}, nil},
		{"scheme only", []string{"Bearer"}, nil},
		{"empty header", []string{""}, nil},
		{"two headers", []string{"Bearer alice-token", "Bearer alice-token"}, nil},
		{"trailing garbage", []string{"Bearer alice-token x"}, nil},
		{"no header, not dev", nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := a.Authenticate(t.Context(), request(tc.authz...))
			if tc.want == nil {
				if !errors.Is(err, ErrUnauthenticated) {
					t.Fatalf("err = %v, want ErrUnauthenticated", err)
				}
				if err.Error() != "missing or invalid bearer token" {
					t.Errorf("client-facing message %q gives details away", err.Error())
				}
				return
			}
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			if !samePrincipal(p, *tc.want) {
				t.Errorf("principal = %+v, want %+v", p, *tc.want)
			}
		})
	}
	if leak := containsAny(logs.String(), "alice-token", "mallory-token", HashSecret("alice-token"), HashSecret("mallory-token")); leak != "" {
		t.Errorf("log holds a token or its hash %q:\n%s", leak, logs.String())
	}
	if !strings.Contains(logs.String(), "authentication failed") {
		t.Errorf("failures were not logged at debug level:\n%s", logs.String())
	}
	if got := counterValue(t, reg, "floe_authn_requests_total", "method", "token_file", "result", "ok"); got != 3 {
		t.Errorf("floe_authn_requests_total{token_file,ok} = %v, want 3", got)
	}
	if got := counterValue(t, reg, "floe_authn_requests_total", "method", "token_file", "result", "fail"); got != 9 {
		t.Errorf("floe_authn_requests_total{token_file,fail} = %v, want 9", got)
	}
	if got := counterValue(t, reg, "floe_authn_requests_total", "method", "anonymous", "result", "fail"); got != 1 {
		t.Errorf("floe_authn_requests_total{anonymous,fail} = %v, want 1", got)
	}
}

func TestTokenFileReload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.json")
	writeTokenFile(t, path, tokenEntry{SHA256: HashSecret("old"), Principal: "alice"})
	logs := &logBuffer{}
	a := newAuth(t, Config{TokenFile: path}, logs)
	works := func(token string) bool {
		_, err := a.Authenticate(t.Context(), request("Bearer "+token))
		return err == nil
	}
	if !works("old") || works("new") {
		t.Fatal("initial token file not in effect")
	}

	writeTokenFile(t, path, tokenEntry{SHA256: HashSecret("new-token"), Principal: "alice"})
	// Make the change visible even where mtime is coarse.
	bump(t, path, time.Now().Add(time.Second))
	waitFor(t, "the new token to authenticate", func() bool { return works("new-token") })
	if works("old") {
		t.Error("a token removed from the file still authenticates")
	}

	if err := os.WriteFile(path, []byte(`{"tokens":[{"sha256":"nothex","principal":"x"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bump(t, path, time.Now().Add(2*time.Second))
	waitFor(t, "the bad file to be reported", func() bool { return strings.Contains(logs.String(), "reload failed") })
	if !works("new-token") {
		t.Error("a bad token file replaced the good set")
	}
}

func bump(t *testing.T, path string, mt time.Time) {
	t.Helper()
	if err := os.Chtimes(path, mt, mt); err != nil {
		t.Fatal(err)
	}
}

func TestDevMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.json")
	writeTokenFile(t, path, tokenEntry{SHA256: HashSecret("alice-token"), Principal: "alice"})
	for _, withFile := range []bool{false, true} {
		cfg := Config{Dev: true}
		if withFile {
			cfg.TokenFile = path
		}
		a := newAuth(t, cfg, nil)
		p, err := a.Authenticate(t.Context(), request())
		if err != nil || !p.Anonymous || p.ID != "anonymous" {
			t.Errorf("file=%v: no header: %+v, %v; want anonymous", withFile, p, err)
		}
		// Placeholders unconfigured clients send (PyIceberg: "Bearer None")
		// are no token.
		for _, h := range []string{"Bearer None", "bearer null", "Bearer undefined"} {
			if p, err := a.Authenticate(t.Context(), request(h)); err != nil || !p.Anonymous {
				t.Errorf("file=%v: %q in dev mode: %+v, %v; want anonymous", withFile, h, p, err)
			}
		}
		if _, err := a.Authenticate(t.Context(), request("Bearer bogus")); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("file=%v: a bad token in dev mode: err = %v, want ErrUnauthenticated", withFile, err)
		}
		if _, err := a.Authenticate(t.Context(), request("Basic Zm9vOmJhcg==")); !errors.Is(err, ErrUnauthenticated) {
			t.Errorf("file=%v: a non-bearer header in dev mode: err = %v, want ErrUnauthenticated", withFile, err)
		}
		if withFile {
			p, err := a.Authenticate(t.Context(), request("Bearer alice-token"))
			if err != nil || p.ID != "alice" || p.Anonymous {
				t.Errorf("a good token in dev mode: %+v, %v", p, err)
			}
		}
	}
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.json")
	writeTokenFile(t, path, tokenEntry{SHA256: HashSecret("alice-token"), Principal: "alice", Groups: []string{"g"}})
	a := newAuth(t, Config{TokenFile: path}, nil)
	var gotErr error
	onError := func(w http.ResponseWriter, r *http.Request, err error) {
		gotErr = err
		http.Error(w, `{"error":{"code":401}}`, http.StatusUnauthorized)
	}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := FromContext(r.Context())
		if !ok {
			http.Error(w, "no principal", http.StatusInternalServerError)
			return
		}
		if got := PrincipalOf(r); got.ID != p.ID {
			http.Error(w, "PrincipalOf differs from FromContext: "+got.ID, http.StatusInternalServerError)
			return
		}
		io.WriteString(w, p.ID+":"+strings.Join(p.Groups, ","))
	})
	srv := httptest.NewServer(a.Middleware(onError)(next))
	defer srv.Close()

	tests := []struct {
		name      string
		authz     string
		status    int
		challenge string
		body      string
	}{
		{"ok", "Bearer alice-token", 200, "", "alice:g"},
		{"no token", "", 401, "Bearer", ""},
		{"bad token", "Bearer nope", 401, `Bearer error="invalid_token"`, ""},
		{"wrong scheme", "Basic YTpi", 401, `Bearer error="invalid_token"`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gotErr = nil
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL, nil)
			if tc.authz != "" {
				req.Header.Set("Authorization", tc.authz)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d (%s)", resp.StatusCode, tc.status, body)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tc.challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tc.challenge)
			}
			if tc.status == 200 && string(body) != tc.body {
				t.Errorf("body = %q, want %q", body, tc.body)
			}
			if tc.status == 401 && !errors.Is(gotErr, ErrUnauthenticated) {
				t.Errorf("onError got %v, want ErrUnauthenticated", gotErr)
			}
		})
	}

	ctx := NewContext(t.Context(), policy.Principal{ID: "x"})
	if p, ok := FromContext(ctx); !ok || p.ID != "x" {
		t.Errorf("FromContext(NewContext) = %+v, %v", p, ok)
	}
	if _, ok := FromContext(t.Context()); ok {
		t.Error("FromContext on a bare context reports a principal")
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	jwks := writeFile(t, dir, "jwks.json", jwksJSON(t, newSigningKey(t, jwa.EdDSA(), "k1")))
	clients := filepath.Join(dir, "clients.json")
	writeClientsFile(t, clients, clientEntry{ClientID: "c", SecretSHA256: HashSecret("s"), Principal: "p"})
	jwtOK := JWTConfig{JWKSFile: jwks, Issuers: []string{"i"}, Audiences: []string{"a"}}
	with := func(f func(*JWTConfig)) JWTConfig { c := jwtOK; f(&c); return c }
	tests := []struct {
		name string
		cfg  Config
		want string // substring of the error; "" = valid
	}{
		{"nothing configured", Config{}, "--auth-token-file"},
		{"dev alone", Config{Dev: true}, ""},
		{"jwt ok", Config{JWT: jwtOK}, ""},
		{"jwt without issuer", Config{JWT: with(func(c *JWTConfig) { c.Issuers = nil })}, "--auth-jwt-issuer"},
		{"jwt without audience", Config{JWT: with(func(c *JWTConfig) { c.Audiences = nil })}, "--auth-jwt-audience"},
		{"alg none", Config{JWT: with(func(c *JWTConfig) { c.Algorithms = []string{"RS256", "none"} })}, `"none"`},
		{"unknown alg", Config{JWT: with(func(c *JWTConfig) { c.Algorithms = []string{"XS999"} })}, "XS999"},
		{"jwt issuer is the oauth issuer", Config{JWT: with(func(c *JWTConfig) { c.Issuers = []string{"floe"} }), OAuth: OAuthConfig{ClientsFile: clients}}, "OAuth issuer"},
		{"missing token file", Config{TokenFile: filepath.Join(dir, "nope.json")}, "--auth-token-file"},
		{"missing jwks file", Config{JWT: with(func(c *JWTConfig) { c.JWKSFile = filepath.Join(dir, "nope") })}, "--auth-jwks-file"},
		{"missing clients file", Config{OAuth: OAuthConfig{ClientsFile: filepath.Join(dir, "nope")}}, "--auth-oauth-clients-file"},
		{"negative ttl", Config{OAuth: OAuthConfig{ClientsFile: clients, TokenTTL: -time.Second}}, "--auth-oauth-token-ttl"},
		{"bad signing key", Config{OAuth: OAuthConfig{ClientsFile: clients, SigningKeyFile: jwks}}, "--auth-oauth-signing-key-file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(t.Context(), tc.cfg, nil, nil)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("New: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("New: err = %v, want one naming %s", err, tc.want)
			}
		})
	}
}

func TestBadTokenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := map[string]string{
		"not json":      `{`,
		"unknown field": `{"tokens":[{"sha-256":"` + HashSecret("x") + `","principal":"a"}]}`,
		"short hash":    `{"tokens":[{"sha256":"abcd","principal":"a"}]}`,
		"no principal":  `{"tokens":[{"sha256":"` + HashSecret("x") + `"}]}`,
		"duplicate":     `{"tokens":[{"sha256":"` + HashSecret("x") + `","principal":"a"},{"sha256":"` + HashSecret("x") + `","principal":"b"}]}`,
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			p := writeFile(t, dir, "tokens.json", []byte(content))
			if _, err := New(t.Context(), Config{TokenFile: p}, nil, nil); err == nil {
				t.Fatal("New accepted a bad token file")
			}
		})
	}
}

func TestCheckDevAddr(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:8181", true},
		{"127.1.2.3:8181", true},
		{"localhost:8181", true},
		{"LOCALHOST:0", true},
		{"[::1]:8181", true},
		{":8181", false},
		{"0.0.0.0:8181", false},
		{"[::]:8181", false},
		{"10.0.0.1:8181", false},
		{"192.168.1.5:8181", false},
		{"example.com:8181", false},
		{"localhost.example.com:8181", false},
		{"[fe80::1%lo]:8181", false},
		{"8181", false},
		{"", false},
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			err := CheckDevAddr(tc.addr)
			if tc.ok && err != nil {
				t.Fatalf("CheckDevAddr(%q) = %v, want ok", tc.addr, err)
			}
			if !tc.ok && err == nil {
				t.Fatalf("CheckDevAddr(%q) accepted a non-loopback address", tc.addr)
			}
		})
	}
	if err := CheckDevAddr(":8181"); err == nil || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("the error does not explain why: %v", err)
	}
}

func TestNewToken(t *testing.T) {
	t.Parallel()
	a, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewToken()
	if a == b || len(a) != 43 || strings.ContainsAny(a, ".=+/") {
		t.Errorf("NewToken = %q, %q: want distinct 43-char base64url tokens", a, b)
	}
	if _, err := bearerToken("Bearer " + a); err != nil {
		t.Errorf("a new token is not a valid bearer token: %v", err)
	}
	if got := HashSecret("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("HashSecret(abc) = %s", got)
	}
}
