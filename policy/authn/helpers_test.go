package authn

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/policy"
)

// t0 is the tests' "now": tokens are minted relative to it and the
// authenticator's clock starts there.
var t0 = time.Unix(1_800_000_000, 0)

// testClock is a settable clock for Config.Now.
type testClock struct{ ns atomic.Int64 }

func newClock() *testClock {
	c := &testClock{}
	c.ns.Store(t0.UnixNano())
	return c
}
func (c *testClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *testClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }

// logBuffer collects log output for assertions; slog handlers may write
// from the reload goroutine while the test reads.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func debugLogger(w *logBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func writeJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

type tokenEntry struct {
	SHA256    string   `json:"sha256"`
	Principal string   `json:"principal"`
	Groups    []string `json:"groups,omitempty"`
}

func writeTokenFile(t testing.TB, path string, entries ...tokenEntry) {
	t.Helper()
	writeJSON(t, path, map[string]any{"tokens": entries})
}

type clientEntry struct {
	ClientID     string   `json:"client_id"`
	SecretSHA256 string   `json:"secret_sha256"`
	Principal    string   `json:"principal"`
	Groups       []string `json:"groups,omitempty"`
}

func writeClientsFile(t testing.TB, path string, entries ...clientEntry) {
	t.Helper()
	writeJSON(t, path, map[string]any{"clients": entries})
}

func newAuth(t testing.TB, cfg Config, logs *logBuffer) *Authenticator {
	t.Helper()
	if cfg.ReloadInterval == 0 {
		cfg.ReloadInterval = 20 * time.Millisecond
	}
	var logger *slog.Logger
	if logs != nil {
		logger = debugLogger(logs)
	}
	a, err := New(t.Context(), cfg, logger, prometheus.NewRegistry())
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return a
}

func request(authz ...string) *http.Request {
	r, _ := http.NewRequest(http.MethodGet, "http://floe.test/v1/config", nil)
	for _, v := range authz {
		r.Header.Add("Authorization", v)
	}
	return r
}

// signingKey is a private key as a JWK with kid and alg, and its public
// half in a set.
type signingKey struct {
	alg  jwa.SignatureAlgorithm
	priv jwk.Key
	pub  jwk.Key
}

func newSigningKey(t testing.TB, alg jwa.SignatureAlgorithm, kid string) signingKey {
	t.Helper()
	var raw crypto.Signer
	var err error
	switch alg {
	case jwa.RS256():
		raw, err = rsa.GenerateKey(rand.Reader, 2048)
	case jwa.EdDSA():
		_, raw, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("no key type for %s", alg)
	}
	if err != nil {
		t.Fatal(err)
	}
	priv, err := jwk.Import(raw)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]any{jwk.KeyIDKey: kid, jwk.AlgorithmKey: alg} {
		if err := priv.Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	pub, err := jwk.PublicKeyOf(priv)
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{alg: alg, priv: priv, pub: pub}
}

func jwksJSON(t testing.TB, keys ...signingKey) []byte {
	t.Helper()
	set := jwk.NewSet()
	for _, k := range keys {
		if err := set.AddKey(k.pub); err != nil {
			t.Fatal(err)
		}
	}
	data, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// claims are the claims of a test JWT; zero times are left out.
type claims struct {
	iss, sub string
	aud      []string
	iat, nbf time.Time
	exp      time.Time
	extra    map[string]any
}

func validClaims() claims {
	return claims{iss: "https://idp.test", sub: "bob", aud: []string{"floe-api"}, iat: t0.Add(-time.Minute), exp: t0.Add(time.Hour)}
}

func (c claims) token(t testing.TB) jwt.Token {
	t.Helper()
	b := jwt.NewBuilder()
	if c.iss != "" {
		b = b.Issuer(c.iss)
	}
	if c.sub != "" {
		b = b.Subject(c.sub)
	}
	if c.aud != nil {
		b = b.Audience(c.aud)
	}
	if !c.iat.IsZero() {
		b = b.IssuedAt(c.iat)
	}
	if !c.nbf.IsZero() {
		b = b.NotBefore(c.nbf)
	}
	if !c.exp.IsZero() {
		b = b.Expiration(c.exp)
	}
	for k, v := range c.extra {
		b = b.Claim(k, v)
	}
	tok, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (c claims) sign(t testing.TB, k signingKey) string {
	t.Helper()
	s, err := jwt.Sign(c.token(t), jwt.WithKey(k.alg, k.priv))
	if err != nil {
		t.Fatal(err)
	}
	return string(s)
}

func (c claims) signHS256(t testing.TB, secret []byte) string {
	t.Helper()
	s, err := jwt.Sign(c.token(t), jwt.WithKey(jwa.HS256(), secret))
	if err != nil {
		t.Fatal(err)
	}
	return string(s)
}

// unsigned builds an alg "none" token by hand: jwx refuses to.
func (c claims) unsigned(t testing.TB) string {
	t.Helper()
	payload, err := json.Marshal(c.token(t))
	if err != nil {
		t.Fatal(err)
	}
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(payload) + "."
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func samePrincipal(a, b policy.Principal) bool {
	if a.ID != b.ID || a.Anonymous != b.Anonymous || len(a.Groups) != len(b.Groups) {
		return false
	}
	for i := range a.Groups {
		if a.Groups[i] != b.Groups[i] {
			return false
		}
	}
	return true
}

// waitFor polls cond until it holds or 5s pass.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func containsAny(s string, subs ...string) string {
	for _, x := range subs {
		if x != "" && strings.Contains(s, x) {
			return x
		}
	}
	return ""
}

// counterValue reads one counter from reg; labels are name, value pairs.
func counterValue(t testing.TB, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			for i := 0; i+1 < len(labels); i += 2 {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func b64dec(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }
