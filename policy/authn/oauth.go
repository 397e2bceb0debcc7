package authn

import (
	"context"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/floe-catalog/floe/policy"
)

// The token endpoint's wire constants (RFC 6749, RFC 8693, Iceberg REST
// OAuthTokenRequest/OAuthTokenResponse/OAuthError).
const (
	grantClientCredentials = "client_credentials"
	issuedTokenTypeAccess  = "urn:ietf:params:oauth:token-type:access_token"
	maxTokenRequestBody    = 64 << 10
	claimGroups            = "groups"
	claimClientID          = "client_id"
	claimScope             = "scope"
)

// OAuth error codes.
const (
	oauthInvalidRequest       = "invalid_request"
	oauthInvalidClient        = "invalid_client"
	oauthUnsupportedGrantType = "unsupported_grant_type"
	oauthInvalidScope         = "invalid_scope"
)

type oauthClient struct {
	id         string
	secretHash [sha256.Size]byte
	principal  policy.Principal
}

type clientsFile struct {
	Clients []struct {
		ClientID     string   `json:"client_id"`
		SecretSHA256 string   `json:"secret_sha256"`
		Principal    string   `json:"principal"`
		Groups       []string `json:"groups"`
	} `json:"clients"`
}

func loadClientsFile(path string) ([]oauthClient, error) {
	data, err := readSmallFile(path)
	if err != nil {
		return nil, err
	}
	var f clientsFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("clients file %s: %w", path, err)
	}
	seen := map[string]bool{}
	out := make([]oauthClient, 0, len(f.Clients))
	for i, c := range f.Clients {
		if c.ClientID == "" || c.Principal == "" {
			return nil, fmt.Errorf("clients file %s: clients[%d]: client_id and principal must not be empty", path, i)
		}
		if seen[c.ClientID] {
			return nil, fmt.Errorf("clients file %s: client_id %q appears twice", path, c.ClientID)
		}
		seen[c.ClientID] = true
		h, err := parseHash(c.SecretSHA256)
		if err != nil {
			return nil, fmt.Errorf("clients file %s: client %q: secret_%w", path, c.ClientID, err)
		}
		out = append(out, oauthClient{id: c.ClientID, secretHash: h, principal: policy.Principal{ID: c.Principal, Groups: nonNil(c.Groups)}})
	}
	return out, nil
}

// oauthServer issues and verifies the tokens of the client-credentials
// endpoint. Its tokens are EdDSA JWTs signed with its own key, so
// verifying one needs no state beyond that key.
type oauthServer struct {
	cfg     OAuthConfig
	now     func() time.Time
	logger  *slog.Logger
	issued  func()
	clients atomic.Pointer[[]oauthClient]
	priv    jwk.Key
	pub     jwk.Key
}

func newOAuthServer(ctx context.Context, cfg Config, logger *slog.Logger, issued func()) (*oauthServer, error) {
	s := &oauthServer{cfg: cfg.OAuth, now: cfg.Now, logger: logger, issued: issued}
	path := cfg.OAuth.ClientsFile
	st, err := stampOf(path)
	if err != nil {
		return nil, fmt.Errorf("authn: OAuth clients file (--auth-oauth-clients-file): %w", err)
	}
	if err := s.loadClients(); err != nil {
		return nil, fmt.Errorf("authn: OAuth clients file (--auth-oauth-clients-file): %w", err)
	}
	go watchFile(ctx, logger, "OAuth clients", path, cfg.ReloadInterval, st, s.loadClients)

	var raw ed25519.PrivateKey
	if cfg.OAuth.SigningKeyFile == "" {
		_, raw, err = ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, fmt.Errorf("authn: generate OAuth signing key: %w", err)
		}
		logger.Warn("authn: no OAuth signing key file (--auth-oauth-signing-key-file); using a key generated for this process, so issued tokens stop working when it exits")
	} else {
		raw, err = readEd25519Key(cfg.OAuth.SigningKeyFile)
		if err != nil {
			return nil, fmt.Errorf("authn: OAuth signing key (--auth-oauth-signing-key-file): %w", err)
		}
	}
	if s.priv, err = jwk.Import(raw); err != nil {
		return nil, fmt.Errorf("authn: import OAuth signing key: %w", err)
	}
	if s.pub, err = jwk.PublicKeyOf(s.priv); err != nil {
		return nil, fmt.Errorf("authn: OAuth public key: %w", err)
	}
	// A kid lets a later key rotation tell old tokens from new ones.
	tp, err := s.pub.Thumbprint(crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("authn: OAuth key thumbprint: %w", err)
	}
	kid := base64.RawURLEncoding.EncodeToString(tp)
	if err := s.priv.Set(jwk.KeyIDKey, kid); err != nil {
		return nil, err
	}
	return s, nil
}

func readEd25519Key(path string) (ed25519.PrivateKey, error) {
	data, err := readSmallFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s holds no PEM block", path)
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("%s holds a %T, not an Ed25519 private key", path, k)
	}
	return priv, nil
}

func (s *oauthServer) loadClients() error {
	c, err := loadClientsFile(s.cfg.ClientsFile)
	if err != nil {
		return err
	}
	s.clients.Store(&c)
	return nil
}

// dummyHash keeps the work for an unknown client_id the same as for a
// known one with a wrong secret.
var dummyHash [sha256.Size]byte

// authenticateClient checks a client's secret. All clients are scanned in
// constant time so timing reveals neither which IDs exist nor the secret.
func (s *oauthServer) authenticateClient(id, secret string) (oauthClient, bool) {
	h := sha256.Sum256([]byte(secret))
	found := -1
	clients := *s.clients.Load()
	for i := range clients {
		idOK := subtle.ConstantTimeCompare([]byte(clients[i].id), []byte(id))
		secOK := subtle.ConstantTimeCompare(clients[i].secretHash[:], h[:])
		if idOK&secOK == 1 {
			found = i
		}
	}
	if found < 0 {
		subtle.ConstantTimeCompare(dummyHash[:], h[:])
		return oauthClient{}, false
	}
	return clients[found], true
}

func (s *oauthServer) issue(c oauthClient, scope string) (string, error) {
	now := s.now()
	jti := make([]byte, 16)
	if _, err := rand.Read(jti); err != nil {
		return "", err
	}
	b := jwt.NewBuilder().
		Issuer(s.cfg.Issuer).
		Subject(c.principal.ID).
		Audience([]string{Audience}).
		IssuedAt(now).
		Expiration(now.Add(s.cfg.TokenTTL)).
		JwtID(base64.RawURLEncoding.EncodeToString(jti)).
		Claim(claimGroups, c.principal.Groups).
		Claim(claimClientID, c.id)
	if scope != "" {
		b = b.Claim(claimScope, scope)
	}
	tok, err := b.Build()
	if err != nil {
		return "", fmt.Errorf("build token: %w", err)
	}
	signed, err := jwt.Sign(tok, jwt.WithKey(jwa.EdDSA(), s.priv))
	if err != nil {
		return "", fmt.Errorf("sign token: %w", err)
	}
	return string(signed), nil
}

func (s *oauthServer) verify(ctx context.Context, token []byte) (policy.Principal, error) {
	tok, err := jwt.Parse(token,
		jwt.WithKey(jwa.EdDSA(), s.pub),
		jwt.WithValidate(true),
		jwt.WithContext(ctx),
		jwt.WithClock(jwt.ClockFunc(s.now)),
		// Issuer and verifier share a clock; the skew only covers
		// clocks of replicas sharing a signing key file.
		jwt.WithAcceptableSkew(5*time.Second),
		jwt.WithIssuer(s.cfg.Issuer),
		jwt.WithAudience(Audience),
		jwt.WithRequiredClaim(jwt.ExpirationKey),
	)
	if err != nil {
		return policy.Principal{}, fmt.Errorf("oauth token: %w", err)
	}
	return principalFromClaims(tok, jwt.SubjectKey, claimGroups)
}

type tokenResponse struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	ExpiresIn       int64  `json:"expires_in"`
	IssuedTokenType string `json:"issued_token_type"`
	Scope           string `json:"scope,omitempty"`
}

type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// tokenHandler serves POST /v1/oauth/tokens. s is nil when no clients
// file is configured: every request is then answered 400
// unsupported_grant_type, which is what the spec's OAuthError offers for
// a server that grants no token at all.
func tokenHandler(s *oauthServer, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeOAuthError(w, http.StatusMethodNotAllowed, oauthInvalidRequest, "use POST")
			return
		}
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/x-www-form-urlencoded" {
			writeOAuthError(w, http.StatusBadRequest, oauthInvalidRequest, "the body must be application/x-www-form-urlencoded")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxTokenRequestBody)
		if err := r.ParseForm(); err != nil {
			writeOAuthError(w, http.StatusBadRequest, oauthInvalidRequest, "malformed or too large form body")
			return
		}
		// Secrets in the URL end up in access logs; only the body counts.
		form := r.PostForm
		for k, vs := range form {
			if len(vs) > 1 {
				writeOAuthError(w, http.StatusBadRequest, oauthInvalidRequest, "parameter "+k+" is repeated")
				return
			}
		}
		grant := form.Get("grant_type")
		switch {
		case grant == "":
			writeOAuthError(w, http.StatusBadRequest, oauthInvalidRequest, "grant_type is missing")
			return
		case grant != grantClientCredentials || s == nil:
			writeOAuthError(w, http.StatusBadRequest, oauthUnsupportedGrantType, "only the client_credentials grant is supported, and only when OAuth clients are configured")
			return
		}
		scope := form.Get("scope")
		if !validScope(scope) {
			writeOAuthError(w, http.StatusBadRequest, oauthInvalidScope, "malformed scope")
			return
		}
		id, secret, usedBasic, ok := clientCredentials(r, form)
		if !ok {
			writeOAuthError(w, http.StatusBadRequest, oauthInvalidRequest, "send client_id and client_secret either in the body or with HTTP Basic, not both")
			return
		}
		c, ok := s.authenticateClient(id, secret)
		if id == "" || !ok {
			logger.Debug("authn: OAuth client authentication failed", "client_id", id)
			if usedBasic {
				w.Header().Set("WWW-Authenticate", `Basic realm="floe"`)
			}
			writeOAuthError(w, http.StatusUnauthorized, oauthInvalidClient, "client authentication failed")
			return
		}
		token, err := s.issue(c, scope)
		if err != nil {
			logger.Error("authn: issue OAuth token", "client_id", id, "err", err)
			writeOAuthError(w, http.StatusInternalServerError, "server_error", "could not issue a token")
			return
		}
		s.issued()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Pragma", "no-cache")
		_ = json.NewEncoder(w).Encode(tokenResponse{
			AccessToken:     token,
			TokenType:       "bearer",
			ExpiresIn:       int64(s.cfg.TokenTTL / time.Second),
			IssuedTokenType: issuedTokenTypeAccess,
			Scope:           scope,
		})
	})
}

// clientCredentials takes the client's ID and secret from HTTP Basic or
// the form; RFC 6749 §2.3 forbids using both. Basic credentials are
// form-urlencoded before base64 (RFC 6749 §2.3.1).
func clientCredentials(r *http.Request, form url.Values) (id, secret string, usedBasic, ok bool) {
	_, hasFormID := form["client_id"]
	_, hasFormSecret := form["client_secret"]
	if bu, bp, basic := r.BasicAuth(); basic {
		if hasFormSecret {
			return "", "", true, false
		}
		u, err1 := url.QueryUnescape(bu)
		p, err2 := url.QueryUnescape(bp)
		if err1 != nil || err2 != nil {
			return "", "", true, true // fails authentication
		}
		if hasFormID && form.Get("client_id") != u {
			return "", "", true, false
		}
		return u, p, true, true
	}
	return form.Get("client_id"), form.Get("client_secret"), false, true
}

// validScope accepts RFC 6749 §3.3 scope tokens separated by single
// spaces; the value is echoed back, so nothing else may pass.
func validScope(s string) bool {
	if s == "" {
		return true
	}
	for _, tok := range strings.Split(s, " ") {
		if tok == "" {
			return false
		}
		for i := 0; i < len(tok); i++ {
			c := tok[i]
			if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
				return false
			}
		}
	}
	return true
}

func writeOAuthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(oauthError{Error: code, Description: desc})
}
