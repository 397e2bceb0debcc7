package authn

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwt"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/policy"
)

type oauthEnv struct {
	a     *Authenticator
	srv   *httptest.Server
	clock *testClock
	reg   *prometheus.Registry
}

func newOAuthEnv(t *testing.T, oc OAuthConfig) *oauthEnv {
	t.Helper()
	if oc.ClientsFile == "" {
		oc.ClientsFile = filepath.Join(t.TempDir(), "clients.json")
		writeClientsFile(t, oc.ClientsFile,
			clientEntry{ClientID: "spark", SecretSHA256: HashSecret("spark-secret"), Principal: "spark-etl", Groups: []string{"ingest"}},
			clientEntry{ClientID: "trino", SecretSHA256: HashSecret("trino-secret"), Principal: "trino"},
		)
	}
	e := &oauthEnv{clock: newClock(), reg: prometheus.NewRegistry()}
	var err error
	e.a, err = New(t.Context(), Config{OAuth: oc, Now: e.clock.Now, ReloadInterval: 20 * time.Millisecond}, nil, e.reg)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(e.a.TokenHandler())
	t.Cleanup(e.srv.Close)
	return e
}

type tokenReply struct {
	status  int
	header  http.Header
	token   tokenResponse
	oauthEr oauthError
	raw     map[string]any
}

func (e *oauthEnv) post(t *testing.T, method, contentType, body string, basic []string) tokenReply {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, e.srv.URL+"/v1/oauth/tokens", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if basic != nil {
		req.SetBasicAuth(basic[0], basic[1])
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	r := tokenReply{status: resp.StatusCode, header: resp.Header}
	if err := json.Unmarshal(data, &r.raw); err != nil {
		t.Fatalf("status %d, body is not JSON: %q", resp.StatusCode, data)
	}
	_ = json.Unmarshal(data, &r.token)
	_ = json.Unmarshal(data, &r.oauthEr)
	return r
}

const form = "application/x-www-form-urlencoded"

func TestOAuthTokenEndpoint(t *testing.T) {
	t.Parallel()
	e := newOAuthEnv(t, OAuthConfig{})
	sparkForm := url.Values{"grant_type": {"client_credentials"}, "client_id": {"spark"}, "client_secret": {"spark-secret"}, "scope": {"catalog"}}.Encode()
	tests := []struct {
		name        string
		method      string
		contentType string
		body        string
		basic       []string
		status      int
		errCode     string // "" = success
		principal   *policy.Principal
	}{
		{"form", "POST", form, sparkForm, nil, 200, "", &policy.Principal{ID: "spark-etl", Groups: []string{"ingest"}}},
		{"basic", "POST", form, "grant_type=client_credentials&scope=catalog", []string{"trino", "trino-secret"}, 200, "", &policy.Principal{ID: "trino", Groups: []string{}}},
		{"basic with matching form client_id", "POST", form, "grant_type=client_credentials&client_id=trino&scope=catalog", []string{"trino", "trino-secret"}, 200, "", &policy.Principal{ID: "trino", Groups: []string{}}},
		{"content type with charset", "POST", form + "; charset=utf-8", sparkForm, nil, 200, "", &policy.Principal{ID: "spark-etl", Groups: []string{"ingest"}}},
		{"wrong secret", "POST", form, "grant_type=client_credentials&client_id=spark&client_secret=nope", nil, 401, oauthInvalidClient, nil},
		{"another client's secret", "POST", form, "grant_type=client_credentials&client_id=spark&client_secret=trino-secret", nil, 401, oauthInvalidClient, nil},
		{"unknown client", "POST", form, "grant_type=client_credentials&client_id=mallory&client_secret=x", nil, 401, oauthInvalidClient, nil},
		{"wrong basic secret", "POST", form, "grant_type=client_credentials", []string{"trino", "nope"}, 401, oauthInvalidClient, nil},
		{"no credentials", "POST", form, "grant_type=client_credentials", nil, 401, oauthInvalidClient, nil},
		{"no secret", "POST", form, "grant_type=client_credentials&client_id=spark", nil, 401, oauthInvalidClient, nil},
		{"basic and form secret", "POST", form, "grant_type=client_credentials&client_secret=trino-secret", []string{"trino", "trino-secret"}, 400, oauthInvalidRequest, nil},
		{"basic and other form client_id", "POST", form, "grant_type=client_credentials&client_id=spark", []string{"trino", "trino-secret"}, 400, oauthInvalidRequest, nil},
		{"missing grant_type", "POST", form, "client_id=spark&client_secret=spark-secret", nil, 400, oauthInvalidRequest, nil},
		{"password grant", "POST", form, "grant_type=password&username=a&password=b", nil, 400, oauthUnsupportedGrantType, nil},
		{"token exchange", "POST", form, url.Values{"grant_type": {"urn:ietf:params:oauth:grant-type:token-exchange"}, "subject_token": {"x"}, "subject_token_type": {issuedTokenTypeAccess}}.Encode(), nil, 400, oauthUnsupportedGrantType, nil},
		{"repeated parameter", "POST", form, sparkForm + "&client_id=spark", nil, 400, oauthInvalidRequest, nil},
		{"bad scope", "POST", form, "grant_type=client_credentials&client_id=spark&client_secret=spark-secret&scope=a%20%20b", nil, 400, oauthInvalidScope, nil},
		{"json body", "POST", "application/json", `{"grant_type":"client_credentials"}`, nil, 400, oauthInvalidRequest, nil},
		{"no content type", "POST", "", sparkForm, nil, 400, oauthInvalidRequest, nil},
		{"body too large", "POST", form, sparkForm + "&pad=" + strings.Repeat("x", maxTokenRequestBody), nil, 400, oauthInvalidRequest, nil},
		{"GET", "GET", "", "", nil, 405, oauthInvalidRequest, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := e.post(t, tc.method, tc.contentType, tc.body, tc.basic)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %v", r.status, tc.status, r.raw)
			}
			if r.header.Get("Cache-Control") != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", r.header.Get("Cache-Control"))
			}
			if tc.errCode != "" {
				if r.oauthEr.Error != tc.errCode || r.oauthEr.Description == "" {
					t.Errorf("error body %v, want error %q with a description", r.raw, tc.errCode)
				}
				if _, ok := r.raw["access_token"]; ok {
					t.Error("an error response carries a token")
				}
				if tc.method == "GET" && r.header.Get("Allow") != "POST" {
					t.Errorf("405 without Allow: POST")
				}
				if tc.basic != nil && tc.status == 401 && !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Basic") {
					t.Errorf("401 to a Basic client without a Basic challenge")
				}
				return
			}
			tok := r.token
			if tok.TokenType != "bearer" || tok.ExpiresIn != 3600 || tok.IssuedTokenType != issuedTokenTypeAccess || tok.AccessToken == "" {
				t.Errorf("token response %v", r.raw)
			}
			if tok.Scope != "catalog" {
				t.Errorf("scope %q not echoed", tok.Scope)
			}
			p, err := e.a.Authenticate(t.Context(), request("Bearer "+tok.AccessToken))
			if err != nil {
				t.Fatalf("the issued token does not authenticate: %v", err)
			}
			if !samePrincipal(p, *tc.principal) {
				t.Errorf("principal %+v, want %+v", p, *tc.principal)
			}
		})
	}
	if got := counterValue(t, e.reg, "floe_oauth_tokens_issued_total"); got != 4 {
		t.Errorf("floe_oauth_tokens_issued_total = %v, want 4", got)
	}
	if got := counterValue(t, e.reg, "floe_authn_requests_total", "method", "oauth", "result", "ok"); got != 4 {
		t.Errorf("floe_authn_requests_total{oauth,ok} = %v, want 4", got)
	}
}

func TestOAuthTokenClaimsAndExpiry(t *testing.T) {
	t.Parallel()
	e := newOAuthEnv(t, OAuthConfig{TokenTTL: 10 * time.Minute, Issuer: "floe-test"})
	r := e.post(t, "POST", form, "grant_type=client_credentials&client_id=spark&client_secret=spark-secret", nil)
	if r.status != 200 || r.token.ExpiresIn != 600 {
		t.Fatalf("token request: %d %v", r.status, r.raw)
	}
	tok, err := jwt.ParseInsecure([]byte(r.token.AccessToken))
	if err != nil {
		t.Fatal(err)
	}
	iss, _ := tok.Issuer()
	sub, _ := tok.Subject()
	aud, _ := tok.Audience()
	exp, _ := tok.Expiration()
	iat, _ := tok.IssuedAt()
	jti, _ := tok.JwtID()
	var clientID string
	_ = tok.Get("client_id", &clientID)
	if iss != "floe-test" || sub != "spark-etl" || len(aud) != 1 || aud[0] != "floe" || jti == "" || clientID != "spark" ||
		!iat.Equal(t0) || !exp.Equal(t0.Add(10*time.Minute)) {
		t.Errorf("claims iss=%q sub=%q aud=%v jti=%q client_id=%q iat=%v exp=%v", iss, sub, aud, jti, clientID, iat, exp)
	}
	header := strings.Split(r.token.AccessToken, ".")[0]
	if !strings.Contains(string(mustB64(t, header)), `"EdDSA"`) {
		t.Errorf("header %s is not EdDSA", mustB64(t, header))
	}

	authz := request("Bearer " + r.token.AccessToken)
	e.clock.Advance(9 * time.Minute)
	if _, err := e.a.Authenticate(t.Context(), authz); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	e.clock.Advance(2 * time.Minute)
	if _, err := e.a.Authenticate(t.Context(), authz); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("after expiry: %v", err)
	}
}

func TestOAuthTokenFromAnotherServer(t *testing.T) {
	t.Parallel()
	// Two processes without a shared key: neither accepts the other's
	// tokens, although issuer and audience match.
	e1 := newOAuthEnv(t, OAuthConfig{})
	e2 := newOAuthEnv(t, OAuthConfig{})
	r := e1.post(t, "POST", form, "grant_type=client_credentials&client_id=spark&client_secret=spark-secret", nil)
	if _, err := e2.a.Authenticate(t.Context(), request("Bearer "+r.token.AccessToken)); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("a token signed by another key: %v", err)
	}
	// A token claiming the OAuth issuer, signed by some other EdDSA key.
	k := newSigningKey(t, jwa.EdDSA(), "")
	c := claims{iss: "floe", sub: "root", aud: []string{"floe"}, iat: t0, exp: t0.Add(time.Hour)}
	if _, err := e1.a.Authenticate(t.Context(), request("Bearer "+c.sign(t, k))); !errors.Is(err, ErrUnauthenticated) {
		t.Fatalf("a forged OAuth token: %v", err)
	}
}

func TestOAuthSigningKeyFile(t *testing.T) {
	t.Parallel()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	keyFile := writeFile(t, dir, "key.pem", pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	// Two servers sharing a key file (replicas, or a restart) accept each
	// other's tokens.
	e1 := newOAuthEnv(t, OAuthConfig{SigningKeyFile: keyFile})
	e2 := newOAuthEnv(t, OAuthConfig{SigningKeyFile: keyFile})
	r := e1.post(t, "POST", form, "grant_type=client_credentials&client_id=spark&client_secret=spark-secret", nil)
	p, err := e2.a.Authenticate(t.Context(), request("Bearer "+r.token.AccessToken))
	if err != nil || p.ID != "spark-etl" {
		t.Fatalf("token across servers sharing a key: %+v, %v", p, err)
	}
	if _, err := jwt.Parse([]byte(r.token.AccessToken), jwt.WithKey(jwa.EdDSA(), priv.Public()), jwt.WithValidate(false)); err != nil {
		t.Errorf("the token is not signed with the key file's key: %v", err)
	}
}

func TestOAuthClientsReload(t *testing.T) {
	t.Parallel()
	e := newOAuthEnv(t, OAuthConfig{})
	path := e.a.cfg.OAuth.ClientsFile
	writeClientsFile(t, path, clientEntry{ClientID: "flink", SecretSHA256: HashSecret("flink-secret"), Principal: "flink"})
	bump(t, path, time.Now().Add(time.Second))
	waitFor(t, "the new client to get a token", func() bool {
		return e.post(t, "POST", form, "grant_type=client_credentials&client_id=flink&client_secret=flink-secret", nil).status == 200
	})
	if r := e.post(t, "POST", form, "grant_type=client_credentials&client_id=spark&client_secret=spark-secret", nil); r.status != 401 {
		t.Errorf("a removed client still gets tokens: %d", r.status)
	}
}

func TestTokenHandlerWithoutClients(t *testing.T) {
	t.Parallel()
	path := writeFile(t, t.TempDir(), "tokens.json", []byte(`{"tokens":[]}`))
	a := newAuth(t, Config{TokenFile: path}, nil)
	srv := httptest.NewServer(a.TokenHandler())
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL, form, strings.NewReader("grant_type=client_credentials&client_id=a&client_secret=b"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body oauthError
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if resp.StatusCode != 400 || body.Error != oauthUnsupportedGrantType {
		t.Fatalf("got %d %+v, want 400 unsupported_grant_type", resp.StatusCode, body)
	}
}

func mustB64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := b64dec(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
