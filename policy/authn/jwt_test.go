package authn

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"

	"github.com/floe-catalog/floe/policy"
)

// jwksServer serves a JWKS that the test can swap, and counts fetches.
type jwksServer struct {
	*httptest.Server
	body    atomic.Pointer[[]byte]
	fetches atomic.Int32
}

func newJWKSServer(t *testing.T, body []byte) *jwksServer {
	s := &jwksServer{}
	s.body.Store(&body)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(*s.body.Load())
	}))
	t.Cleanup(s.Close)
	return s
}

func TestJWT(t *testing.T) {
	t.Parallel()
	rsaKey := newSigningKey(t, jwa.RS256(), "rsa-1")
	edKey := newSigningKey(t, jwa.EdDSA(), "ed-1")
	strangerKey := newSigningKey(t, jwa.EdDSA(), "stranger") // not in the JWKS
	impostorKey := newSigningKey(t, jwa.EdDSA(), "ed-1")     // right kid, wrong key
	jwks := jwksJSON(t, rsaKey, edKey)

	sources := map[string]func(t *testing.T) JWTConfig{
		"file": func(t *testing.T) JWTConfig {
			return JWTConfig{JWKSFile: writeFile(t, t.TempDir(), "jwks.json", jwks)}
		},
		"url": func(t *testing.T) JWTConfig {
			return JWTConfig{JWKSURL: newJWKSServer(t, jwks).URL}
		},
	}
	bob := &policy.Principal{ID: "bob", Groups: []string{}}
	for _, key := range []signingKey{rsaKey, edKey} {
		tests := []struct {
			name  string
			token func(t *testing.T) string
			want  *policy.Principal
		}{
			{"ok", func(t *testing.T) string { return validClaims().sign(t, key) }, bob},
			{"groups claim", func(t *testing.T) string {
				c := validClaims()
				c.extra = map[string]any{"groups": []string{"publishers", "readers"}}
				return c.sign(t, key)
			}, &policy.Principal{ID: "bob", Groups: []string{"publishers", "readers"}}},
			{"groups claim not an array", func(t *testing.T) string {
				c := validClaims()
				c.extra = map[string]any{"groups": "publishers"}
				return c.sign(t, key)
			}, nil},
			{"groups claim with a number", func(t *testing.T) string {
				c := validClaims()
				c.extra = map[string]any{"groups": []any{"a", 1}}
				return c.sign(t, key)
			}, nil},
			{"second audience matches", func(t *testing.T) string {
				c := validClaims()
				c.aud = []string{"someone-else", "floe-api"}
				return c.sign(t, key)
			}, bob},
			{"second issuer accepted", func(t *testing.T) string {
				c := validClaims()
				c.iss = "https://idp2.test"
				return c.sign(t, key)
			}, bob},
			{"expired", func(t *testing.T) string {
				c := validClaims()
				c.exp = t0.Add(-time.Minute)
				return c.sign(t, key)
			}, nil},
			{"expired within leeway", func(t *testing.T) string {
				c := validClaims()
				c.exp = t0.Add(-10 * time.Second)
				return c.sign(t, key)
			}, bob},
			{"no exp", func(t *testing.T) string {
				c := validClaims()
				c.exp = time.Time{}
				return c.sign(t, key)
			}, nil},
			{"not yet valid", func(t *testing.T) string {
				c := validClaims()
				c.nbf = t0.Add(5 * time.Minute)
				return c.sign(t, key)
			}, nil},
			{"issued in the future", func(t *testing.T) string {
				c := validClaims()
				c.iat = t0.Add(5 * time.Minute)
				return c.sign(t, key)
			}, nil},
			{"wrong issuer", func(t *testing.T) string {
				c := validClaims()
				c.iss = "https://evil.test"
				return c.sign(t, key)
			}, nil},
			{"no issuer", func(t *testing.T) string {
				c := validClaims()
				c.iss = ""
				return c.sign(t, key)
			}, nil},
			{"wrong audience", func(t *testing.T) string {
				c := validClaims()
				c.aud = []string{"other-api"}
				return c.sign(t, key)
			}, nil},
			{"no subject", func(t *testing.T) string {
				c := validClaims()
				c.sub = ""
				return c.sign(t, key)
			}, nil},
			{"HS256 not allowed", func(t *testing.T) string {
				return validClaims().signHS256(t, []byte("some-shared-secret-of-32-bytes!!"))
			}, nil},
			{"alg none", func(t *testing.T) string { return validClaims().unsigned(t) }, nil},
			{"unknown kid", func(t *testing.T) string { return validClaims().sign(t, strangerKey) }, nil},
			{"known kid, wrong key", func(t *testing.T) string { return validClaims().sign(t, impostorKey) }, nil},
			{"tampered payload", func(t *testing.T) string {
				good := validClaims().sign(t, key)
				c := validClaims()
				c.sub = "root"
				forged := strings.Split(c.sign(t, key), ".")
				parts := strings.Split(good, ".")
				return parts[0] + "." + forged[1] + "." + parts[2]
			}, nil},
		}
		for srcName, src := range sources {
			t.Run(key.alg.String()+"/"+srcName, func(t *testing.T) {
				jc := src(t)
				jc.Issuers = []string{"https://idp.test", "https://idp2.test"}
				jc.Audiences = []string{"floe-api"}
				logs := &logBuffer{}
				a := newAuth(t, Config{JWT: jc, Now: newClock().Now}, logs)
				for _, tc := range tests {
					t.Run(tc.name, func(t *testing.T) {
						token := tc.token(t)
						p, err := a.Authenticate(t.Context(), request("Bearer "+token))
						if tc.want == nil {
							if !errors.Is(err, ErrUnauthenticated) {
								t.Fatalf("accepted: %+v, %v", p, err)
							}
							if strings.Contains(logs.String(), token) {
								t.Error("the token was logged")
							}
							return
						}
						if err != nil {
							t.Fatalf("Authenticate: %v\nlog:\n%s", err, logs.String())
						}
						if !samePrincipal(p, *tc.want) {
							t.Errorf("principal = %+v, want %+v", p, *tc.want)
						}
					})
				}
			})
		}
	}
}

func TestJWTOptions(t *testing.T) {
	t.Parallel()
	edKey := newSigningKey(t, jwa.EdDSA(), "ed-1")
	path := writeFile(t, t.TempDir(), "jwks.json", jwksJSON(t, edKey))
	base := JWTConfig{JWKSFile: path, Issuers: []string{"https://idp.test"}, Audiences: []string{"floe-api"}}

	t.Run("alg outside a custom allow-list", func(t *testing.T) {
		jc := base
		jc.Algorithms = []string{"RS256"}
		a := newAuth(t, Config{JWT: jc, Now: newClock().Now}, nil)
		if _, err := a.Authenticate(t.Context(), request("Bearer "+validClaims().sign(t, edKey))); err == nil {
			t.Fatal("an EdDSA token passed an RS256-only allow-list")
		}
	})
	t.Run("principal and groups claims", func(t *testing.T) {
		jc := base
		jc.PrincipalClaim, jc.GroupsClaim = "email", "roles"
		a := newAuth(t, Config{JWT: jc, Now: newClock().Now}, nil)
		c := validClaims()
		c.extra = map[string]any{"email": "bob@example.com", "roles": []string{"admin"}, "groups": []string{"ignored"}}
		p, err := a.Authenticate(t.Context(), request("Bearer "+c.sign(t, edKey)))
		if err != nil || !samePrincipal(p, policy.Principal{ID: "bob@example.com", Groups: []string{"admin"}}) {
			t.Fatalf("got %+v, %v", p, err)
		}
	})
	t.Run("leeway", func(t *testing.T) {
		jc := base
		jc.Leeway = time.Second
		a := newAuth(t, Config{JWT: jc, Now: newClock().Now}, nil)
		c := validClaims()
		c.exp = t0.Add(-10 * time.Second)
		if _, err := a.Authenticate(t.Context(), request("Bearer "+c.sign(t, edKey))); err == nil {
			t.Fatal("a token expired 10s ago passed a 1s leeway")
		}
	})
	t.Run("HS256 when listed, with an oct key", func(t *testing.T) {
		secret := []byte("some-shared-secret-of-32-bytes!!")
		oct := `{"keys":[{"kty":"oct","kid":"h1","k":"` + b64(secret) + `"}]}`
		jc := base
		jc.JWKSFile = writeFile(t, t.TempDir(), "jwks.json", []byte(oct))
		jc.Algorithms = []string{"HS256"}
		a := newAuth(t, Config{JWT: jc, Now: newClock().Now}, nil)
		if _, err := a.Authenticate(t.Context(), request("Bearer "+validClaims().signHS256(t, secret))); err != nil {
			t.Fatalf("explicitly allowed HS256: %v", err)
		}
	})
	t.Run("HS256 listed cannot use a public key as the secret", func(t *testing.T) {
		rsaKey := newSigningKey(t, jwa.RS256(), "")
		pubJSON := jwksJSON(t, rsaKey)
		jc := base
		jc.JWKSFile = writeFile(t, t.TempDir(), "jwks.json", pubJSON)
		jc.Algorithms = []string{"RS256", "HS256"}
		a := newAuth(t, Config{JWT: jc, Now: newClock().Now}, nil)
		// The classic confusion attack: HMAC keyed with the public key's
		// bytes. Whatever bytes are used, it must not verify.
		if _, err := a.Authenticate(t.Context(), request("Bearer "+validClaims().signHS256(t, pubJSON))); err == nil {
			t.Fatal("an HS256 token verified against an RSA public key")
		}
	})
}

func TestJWKSURLRotation(t *testing.T) {
	t.Parallel()
	oldKey := newSigningKey(t, jwa.EdDSA(), "old")
	newKey := newSigningKey(t, jwa.EdDSA(), "new")
	srv := newJWKSServer(t, jwksJSON(t, oldKey))
	a := newAuth(t, Config{JWT: JWTConfig{JWKSURL: srv.URL, Issuers: []string{"https://idp.test"}, Audiences: []string{"floe-api"}}, Now: newClock().Now}, nil)
	if _, err := a.Authenticate(t.Context(), request("Bearer "+validClaims().sign(t, oldKey))); err != nil {
		t.Fatalf("old key: %v", err)
	}
	rotated := jwksJSON(t, oldKey, newKey)
	srv.body.Store(&rotated)
	before := srv.fetches.Load()
	// The first token with the new kid forces a refresh.
	if _, err := a.Authenticate(t.Context(), request("Bearer "+validClaims().sign(t, newKey))); err != nil {
		t.Fatalf("new key after rotation: %v", err)
	}
	if srv.fetches.Load() == before {
		t.Error("an unknown kid did not refetch the JWKS")
	}
	// Unknown kids must not each cost a fetch.
	stranger := newSigningKey(t, jwa.EdDSA(), "stranger")
	before = srv.fetches.Load()
	for range 5 {
		if _, err := a.Authenticate(t.Context(), request("Bearer "+validClaims().sign(t, stranger))); err == nil {
			t.Fatal("unknown kid accepted")
		}
	}
	if n := srv.fetches.Load() - before; n > 0 {
		t.Errorf("%d fetches for unknown kids within the refresh interval, want 0", n)
	}
}

func TestJWTNotConfigured(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := writeFile(t, dir, "tokens.json", []byte(`{"tokens":[]}`))
	a := newAuth(t, Config{TokenFile: path, Now: newClock().Now}, nil)
	k := newSigningKey(t, jwa.EdDSA(), "k")
	if _, err := a.Authenticate(t.Context(), request("Bearer "+validClaims().sign(t, k))); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("a JWT with JWT verification off: %v", err)
	}
}

func TestJWKSFileReload(t *testing.T) {
	t.Parallel()
	oldKey := newSigningKey(t, jwa.EdDSA(), "old")
	newKey := newSigningKey(t, jwa.RS256(), "new")
	dir := t.TempDir()
	path := writeFile(t, dir, "jwks.json", jwksJSON(t, oldKey))
	logs := &logBuffer{}
	a := newAuth(t, Config{JWT: JWTConfig{JWKSFile: path, Issuers: []string{"https://idp.test"}, Audiences: []string{"floe-api"}}, Now: newClock().Now}, logs)
	works := func(k signingKey) bool {
		_, err := a.Authenticate(t.Context(), request("Bearer "+validClaims().sign(t, k)))
		return err == nil
	}
	if !works(oldKey) || works(newKey) {
		t.Fatal("initial JWKS not in effect")
	}
	writeFile(t, dir, "jwks.json", jwksJSON(t, newKey))
	bump(t, path, time.Now().Add(time.Second))
	waitFor(t, "the new key to verify", func() bool { return works(newKey) })
	if works(oldKey) {
		t.Error("a key removed from the JWKS file still verifies")
	}
	writeFile(t, dir, "jwks.json", []byte(`{"keys":[]}`))
	bump(t, path, time.Now().Add(2*time.Second))
	waitFor(t, "the empty JWKS to be reported", func() bool { return strings.Contains(logs.String(), "reload failed") })
	if !works(newKey) {
		t.Error("an empty JWKS file replaced the good one")
	}
}
