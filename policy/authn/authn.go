package authn

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/policy"
)

// ErrUnauthenticated is wrapped by every authentication failure. The
// error's text is the same generic message whatever the cause, so it is
// safe to send to the client; the cause is logged at debug level.
var ErrUnauthenticated = errors.New("missing or invalid bearer token")

// authError is an authentication failure. Its Error() never carries the
// cause, which may tell an attacker which part of a forgery was wrong.
type authError struct {
	tokenSent bool
}

func (e *authError) Error() string { return ErrUnauthenticated.Error() }
func (e *authError) Unwrap() error { return ErrUnauthenticated }

// Method labels of floe_authn_requests_total.
const (
	methodTokenFile = "token_file"
	methodJWT       = "jwt"
	methodOAuth     = "oauth"
	methodAnonymous = "anonymous"
)

// maxTokenLen bounds what is hashed or parsed: real tokens are far
// smaller, and a huge header must not cost a JWT parse.
const maxTokenLen = 16 << 10

// Authenticator turns requests into principals. It is safe for concurrent
// use; its background work (file reloads, JWKS refresh) ends with the
// context given to New.
type Authenticator struct {
	cfg    Config
	logger *slog.Logger

	tokens atomic.Pointer[staticTokens] // nil unless TokenFile is set
	jwt    *jwtVerifier                 // nil unless JWT is enabled
	oauth  *oauthServer                 // nil unless OAuth is enabled

	requests *prometheus.CounterVec
	issued   prometheus.Counter
}

// New checks cfg, loads its files and starts watching them until ctx ends.
// reg may be nil.
func New(ctx context.Context, cfg Config, logger *slog.Logger, reg prometheus.Registerer) (*Authenticator, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &Authenticator{
		cfg:    cfg,
		logger: logger,
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "floe_authn_requests_total",
			Help: "Authentication attempts by method (token_file, jwt, oauth, anonymous) and result (ok, fail).",
		}, []string{"method", "result"}),
		issued: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "floe_oauth_tokens_issued_total",
			Help: "Access tokens issued by the OAuth client-credentials endpoint.",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{a.requests, a.issued} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("authn: register metrics: %w", err)
			}
		}
	}
	if path := cfg.TokenFile; path != "" {
		st, err := stampOf(path)
		if err != nil {
			return nil, fmt.Errorf("authn: token file (--auth-token-file): %w", err)
		}
		if err := a.loadTokens(); err != nil {
			return nil, fmt.Errorf("authn: token file (--auth-token-file): %w", err)
		}
		go watchFile(ctx, logger, "token file", path, cfg.ReloadInterval, st, a.loadTokens)
	}
	if cfg.JWT.enabled() {
		if a.jwt, err = newJWTVerifier(ctx, cfg, logger); err != nil {
			return nil, err
		}
	}
	if cfg.OAuth.enabled() {
		if a.oauth, err = newOAuthServer(ctx, cfg, logger, a.issued.Inc); err != nil {
			return nil, err
		}
	}
	return a, nil
}

func (a *Authenticator) loadTokens() error {
	t, err := loadTokenFile(a.cfg.TokenFile)
	if err != nil {
		return err
	}
	a.tokens.Store(&t)
	return nil
}

// Authenticate returns the principal behind r's Authorization header. A
// request without one is anonymous in dev mode and refused otherwise. All
// failures wrap ErrUnauthenticated.
func (a *Authenticator) Authenticate(ctx context.Context, r *http.Request) (policy.Principal, error) {
	vals := r.Header.Values("Authorization")
	if len(vals) == 1 && isPlaceholder(vals[0]) {
		// What an unconfigured client sends is no token at all.
		vals = nil
	}
	if len(vals) == 0 {
		if a.cfg.Dev {
			a.count(methodAnonymous, nil)
			return policy.Principal{ID: "anonymous", Groups: []string{}, Anonymous: true}, nil
		}
		return a.fail(ctx, methodAnonymous, false, errors.New("no Authorization header"))
	}
	if len(vals) > 1 {
		return a.fail(ctx, methodTokenFile, true, errors.New("more than one Authorization header"))
	}
	token, err := bearerToken(vals[0])
	if err != nil {
		return a.fail(ctx, methodTokenFile, true, err)
	}
	return a.authenticateToken(ctx, token)
}

func (a *Authenticator) authenticateToken(ctx context.Context, token string) (policy.Principal, error) {
	if t := a.tokens.Load(); t != nil {
		if p, ok := t.lookup(sha256.Sum256([]byte(token))); ok {
			a.count(methodTokenFile, nil)
			return p, nil
		}
	}
	iss, isJWT := peekIssuer(token)
	if !isJWT {
		return a.fail(ctx, methodTokenFile, true, errors.New("not a known static token and not a JWT"))
	}
	if a.oauth != nil && iss == a.oauth.cfg.Issuer {
		p, err := a.oauth.verify(ctx, []byte(token))
		if err != nil {
			return a.fail(ctx, methodOAuth, true, err)
		}
		a.count(methodOAuth, nil)
		return p, nil
	}
	if a.jwt == nil {
		return a.fail(ctx, methodJWT, true, fmt.Errorf("JWT from issuer %q but JWT verification is not configured", iss))
	}
	p, err := a.jwt.verify(ctx, []byte(token))
	if err != nil {
		return a.fail(ctx, methodJWT, true, err)
	}
	a.count(methodJWT, nil)
	return p, nil
}

func (a *Authenticator) fail(ctx context.Context, method string, tokenSent bool, cause error) (policy.Principal, error) {
	a.count(method, cause)
	// The cause may name a kid, issuer or claim, never the token itself.
	a.logger.DebugContext(ctx, "authn: authentication failed", "method", method, "cause", cause)
	return policy.Principal{}, &authError{tokenSent: tokenSent}
}

func (a *Authenticator) count(method string, err error) {
	result := "ok"
	if err != nil {
		result = "fail"
	}
	a.requests.WithLabelValues(method, result).Inc()
}

// bearerToken extracts the token of an RFC 6750 "Bearer" credential. The
// scheme is case-insensitive; the token must be non-empty, of token68
// characters and of bounded length.
// placeholders are the bearer values clients send when they have no
// token: PyIceberg's default auth manager sends "Bearer None", JavaScript
// clients "Bearer undefined" or "Bearer null".
var placeholders = []string{"None", "null", "undefined"}

// isPlaceholder reports whether an Authorization header carries a
// placeholder instead of a token. A placeholder is never a valid token, so
// reading it as "no token" only changes which 401 message is logged, and
// lets dev mode serve such clients anonymously.
func isPlaceholder(header string) bool {
	scheme, token, ok := strings.Cut(header, " ")
	return ok && strings.EqualFold(scheme, "Bearer") && slices.Contains(placeholders, strings.TrimSpace(token))
}

func bearerToken(header string) (string, error) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", errors.New("authorization scheme is not Bearer")
	}
	token = strings.TrimLeft(token, " ")
	if token == "" {
		return "", errors.New("empty bearer token")
	}
	if len(token) > maxTokenLen {
		return "", errors.New("bearer token too long")
	}
	for i := 0; i < len(token); i++ {
		c := token[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte("-._~+/=", c) >= 0) {
			return "", errors.New("bearer token has characters outside token68")
		}
	}
	return token, nil
}

// peekIssuer reads a compact JWT's unverified "iss" only to pick the
// verifier; the verifier then checks the issuer with the signature.
func peekIssuer(token string) (string, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", false
	}
	var claims struct {
		Iss any `json:"iss"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		return "", false
	}
	iss, _ := claims.Iss.(string)
	return iss, true
}

// TokenHandler serves the Iceberg REST POST /v1/oauth/tokens endpoint
// (client-credentials grant). Without an OAuth clients file it answers
// every request 400 unsupported_grant_type.
func (a *Authenticator) TokenHandler() http.Handler {
	return tokenHandler(a.oauth, a.logger)
}

// Middleware authenticates each request and stores the principal in its
// context (see FromContext). On failure it sets WWW-Authenticate (RFC 6750
// §3) and hands over to onError, which writes the API's own error body
// and status (normally 401).
func (a *Authenticator) Middleware(onError func(w http.ResponseWriter, r *http.Request, err error)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p, err := a.Authenticate(r.Context(), r)
			if err != nil {
				challenge := "Bearer"
				var ae *authError
				if errors.As(err, &ae) && ae.tokenSent {
					challenge = `Bearer error="invalid_token"`
				}
				w.Header().Set("WWW-Authenticate", challenge)
				onError(w, r, err)
				return
			}
			next.ServeHTTP(w, r.WithContext(NewContext(r.Context(), p)))
		})
	}
}

type principalKey struct{}

// NewContext returns ctx carrying p.
func NewContext(ctx context.Context, p policy.Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// FromContext returns the principal Middleware stored in ctx.
func FromContext(ctx context.Context) (policy.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(policy.Principal)
	return p, ok
}

// PrincipalOf returns the principal Middleware stored in r's context, the
// zero Principal if none: the form authz.NewGuard takes.
func PrincipalOf(r *http.Request) policy.Principal {
	p, _ := FromContext(r.Context())
	return p
}
