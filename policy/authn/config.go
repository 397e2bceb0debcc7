package authn

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lestrrat-go/jwx/v3/jwa"
)

// Config says where principals come from. At least one source (TokenFile,
// JWT, OAuth clients) must be set unless Dev is true.
type Config struct {
	// TokenFile is a JSON file of static tokens, stored as SHA-256 hashes
	// only (see README.md). It is reloaded when it changes.
	TokenFile string
	// JWT verifies tokens issued by an external identity provider.
	JWT JWTConfig
	// OAuth serves the Iceberg REST client-credentials endpoint.
	OAuth OAuthConfig
	// Dev admits requests without an Authorization header as the anonymous
	// principal. Requests with a token are still verified. The server must
	// only listen on loopback in dev mode: see CheckDevAddr.
	Dev bool

	// Now is the clock; nil means time.Now. Tests inject one to expire
	// tokens without sleeping.
	Now func() time.Time
	// ReloadInterval is how often the token, clients and JWKS files are
	// checked for changes; 0 means 2s.
	ReloadInterval time.Duration
}

// JWTConfig verifies JWTs from an external issuer. JWT verification is on
// when JWKSFile or JWKSURL is set.
type JWTConfig struct {
	// JWKSFile is a JSON Web Key Set file, reloaded when it changes.
	JWKSFile string
	// JWKSURL is fetched at start and refreshed in the background, as the
	// response's cache headers ask, within bounds.
	JWKSURL string
	// Issuers are the accepted "iss" values; required.
	Issuers []string
	// Audiences are the accepted "aud" values: a token must name at least
	// one; required.
	Audiences []string
	// Algorithms is the allow-list of signature algorithms; default
	// RS256, ES256, EdDSA. "none" is always refused, and HMAC algorithms
	// only work when listed here.
	Algorithms []string
	// PrincipalClaim holds the principal's ID; default "sub".
	PrincipalClaim string
	// GroupsClaim holds the groups as an array of strings; default
	// "groups". A missing claim means no groups.
	GroupsClaim string
	// Leeway is the clock skew tolerated on exp, nbf and iat; default 30s.
	Leeway time.Duration
}

// OAuthConfig configures the client-credentials endpoint. It is on when
// ClientsFile is set.
type OAuthConfig struct {
	// ClientsFile is a JSON file of clients with hashed secrets, reloaded
	// when it changes.
	ClientsFile string
	// TokenTTL is the lifetime of an issued token; default 1h.
	TokenTTL time.Duration
	// SigningKeyFile is a PEM (PKCS #8) Ed25519 private key. When empty a
	// key is generated at start, so issued tokens stop working when the
	// process exits and are not accepted by other replicas.
	SigningKeyFile string
	// Issuer is the "iss" of issued tokens; default "floe".
	Issuer string
}

// Audience is the "aud" of the tokens this package issues.
const Audience = "floe"

// defaultAlgorithms is the JWT algorithm allow-list when none is given.
var defaultAlgorithms = []string{"RS256", "ES256", "EdDSA"}

func (c JWTConfig) enabled() bool { return c.JWKSFile != "" || c.JWKSURL != "" }

func (c OAuthConfig) enabled() bool { return c.ClientsFile != "" }

// withDefaults returns cfg with defaults filled in, or an error naming the
// setting at fault.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.ReloadInterval <= 0 {
		cfg.ReloadInterval = 2 * time.Second
	}
	if cfg.TokenFile == "" && !cfg.JWT.enabled() && !cfg.OAuth.enabled() && !cfg.Dev {
		return cfg, errors.New("authn: no authentication configured: set a token file (--auth-token-file), a JWKS (--auth-jwks-file or --auth-jwks-url) or OAuth clients (--auth-oauth-clients-file), or use --dev")
	}
	if cfg.OAuth.TokenTTL == 0 {
		cfg.OAuth.TokenTTL = time.Hour
	}
	if cfg.OAuth.TokenTTL < 0 {
		return cfg, fmt.Errorf("authn: OAuth token TTL (--auth-oauth-token-ttl) must be positive, got %s", cfg.OAuth.TokenTTL)
	}
	if cfg.OAuth.Issuer == "" {
		cfg.OAuth.Issuer = "floe"
	}
	if !cfg.JWT.enabled() {
		return cfg, nil
	}
	j := &cfg.JWT
	if len(j.Issuers) == 0 || slices.Contains(j.Issuers, "") {
		return cfg, errors.New("authn: JWT verification needs at least one non-empty issuer (--auth-jwt-issuer)")
	}
	if len(j.Audiences) == 0 || slices.Contains(j.Audiences, "") {
		return cfg, errors.New("authn: JWT verification needs at least one non-empty audience (--auth-jwt-audience)")
	}
	if cfg.OAuth.enabled() && slices.Contains(j.Issuers, cfg.OAuth.Issuer) {
		// Tokens are routed to a verifier by issuer; sharing one would
		// make the routing ambiguous.
		return cfg, fmt.Errorf("authn: JWT issuer %q (--auth-jwt-issuer) is also the OAuth issuer of tokens this server signs", cfg.OAuth.Issuer)
	}
	if len(j.Algorithms) == 0 {
		j.Algorithms = slices.Clone(defaultAlgorithms)
	}
	for _, a := range j.Algorithms {
		alg, ok := jwa.LookupSignatureAlgorithm(a)
		if !ok {
			return cfg, fmt.Errorf("authn: unknown JWT algorithm %q (--auth-jwt-algorithms)", a)
		}
		if alg == jwa.NoSignature() || strings.EqualFold(a, "none") {
			return cfg, errors.New(`authn: JWT algorithm "none" (--auth-jwt-algorithms) is never accepted`)
		}
	}
	if j.PrincipalClaim == "" {
		j.PrincipalClaim = "sub"
	}
	if j.GroupsClaim == "" {
		j.GroupsClaim = "groups"
	}
	if j.Leeway == 0 {
		j.Leeway = 30 * time.Second
	}
	if j.Leeway < 0 {
		return cfg, fmt.Errorf("authn: JWT leeway must not be negative, got %s", j.Leeway)
	}
	return cfg, nil
}
