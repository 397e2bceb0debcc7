package authn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lestrrat-go/httprc/v3"
	"github.com/lestrrat-go/jwx/v3/jwa"
	"github.com/lestrrat-go/jwx/v3/jwk"
	"github.com/lestrrat-go/jwx/v3/jws"
	"github.com/lestrrat-go/jwx/v3/jwt"

	"github.com/floe-catalog/floe/policy"
)

// Bounds on refreshing a JWKS URL. The cache follows the response's
// Cache-Control/Expires within [jwksMinRefresh, jwksMaxRefresh]; an unknown
// kid forces an early refresh at most once per jwksMinRefresh, so a flood
// of forged kids cannot turn into a flood of requests to the IdP.
const (
	jwksMinRefresh   = 15 * time.Second
	jwksMaxRefresh   = 15 * time.Minute
	jwksFetchTimeout = 10 * time.Second
	jwksStartWait    = 5 * time.Second
)

// jwtVerifier verifies tokens from an external issuer against a JWKS.
type jwtVerifier struct {
	cfg     JWTConfig
	allowed map[jwa.SignatureAlgorithm]bool
	now     func() time.Time
	logger  *slog.Logger

	fileSet atomic.Pointer[jwk.Set] // nil unless JWKSFile is set

	cache       *jwk.Cache // nil unless JWKSURL is set
	refreshMu   sync.Mutex
	lastRefresh time.Time
}

func newJWTVerifier(ctx context.Context, cfg Config, logger *slog.Logger) (*jwtVerifier, error) {
	v := &jwtVerifier{cfg: cfg.JWT, now: cfg.Now, logger: logger, allowed: map[jwa.SignatureAlgorithm]bool{}}
	for _, a := range cfg.JWT.Algorithms {
		alg, _ := jwa.LookupSignatureAlgorithm(a) // checked by withDefaults
		v.allowed[alg] = true
	}
	if path := cfg.JWT.JWKSFile; path != "" {
		st, err := stampOf(path)
		if err != nil {
			return nil, fmt.Errorf("authn: JWKS file (--auth-jwks-file): %w", err)
		}
		if err := v.loadFile(); err != nil {
			return nil, fmt.Errorf("authn: JWKS file (--auth-jwks-file): %w", err)
		}
		go watchFile(ctx, logger, "JWKS", path, cfg.ReloadInterval, st, v.loadFile)
	}
	if u := cfg.JWT.JWKSURL; u != "" {
		cache, err := jwk.NewCache(ctx, httprc.NewClient())
		if err != nil {
			return nil, fmt.Errorf("authn: JWKS URL (--auth-jwks-url): %w", err)
		}
		err = cache.Register(ctx, u,
			jwk.WithHTTPClient(&http.Client{Timeout: jwksFetchTimeout}),
			jwk.WithMinInterval(jwksMinRefresh),
			jwk.WithMaxInterval(jwksMaxRefresh),
			// Do not block start-up on the IdP: it may come up later,
			// and until then JWTs simply fail.
			jwk.WithWaitReady(false),
		)
		if err != nil {
			return nil, fmt.Errorf("authn: JWKS URL (--auth-jwks-url) %s: %w", u, err)
		}
		v.cache = cache
		wctx, cancel := context.WithTimeout(ctx, jwksStartWait)
		ready := cache.Ready(wctx, u)
		cancel()
		if !ready {
			logger.Warn("authn: JWKS URL not fetched yet; JWTs fail until it is", "url", u)
		}
	}
	return v, nil
}

func (v *jwtVerifier) loadFile() error {
	data, err := readSmallFile(v.cfg.JWKSFile)
	if err != nil {
		return err
	}
	set, err := jwk.Parse(data)
	if err != nil {
		return fmt.Errorf("parse JWKS %s: %w", v.cfg.JWKSFile, err)
	}
	if set.Len() == 0 {
		return fmt.Errorf("JWKS %s holds no keys", v.cfg.JWKSFile)
	}
	v.fileSet.Store(&set)
	return nil
}

// sets returns the key sets currently known: the file's and the URL's.
func (v *jwtVerifier) sets(ctx context.Context) []jwk.Set {
	var out []jwk.Set
	if p := v.fileSet.Load(); p != nil {
		out = append(out, *p)
	}
	if v.cache != nil {
		if s, err := v.cache.Lookup(ctx, v.cfg.JWKSURL); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// refresh re-fetches the JWKS URL unless it was fetched on demand in the
// last jwksMinRefresh. It reports whether looking again may find a new
// key: true too when a concurrent caller has just refreshed, since the
// mutex made this caller wait for that fetch.
func (v *jwtVerifier) refresh(ctx context.Context) bool {
	if v.cache == nil {
		return false
	}
	v.refreshMu.Lock()
	defer v.refreshMu.Unlock()
	now := time.Now()
	if !v.lastRefresh.IsZero() && now.Sub(v.lastRefresh) < jwksMinRefresh {
		return now.Sub(v.lastRefresh) < time.Second
	}
	v.lastRefresh = now
	if _, err := v.cache.Refresh(ctx, v.cfg.JWKSURL); err != nil {
		v.logger.Warn("authn: JWKS refresh failed", "url", v.cfg.JWKSURL, "err", err)
		return false
	}
	return true
}

// findKey picks the key for kid; without a kid it takes the only key there
// is, since guessing among several would mean trying each.
func findKey(sets []jwk.Set, kid string, hasKid bool) (jwk.Key, error) {
	if hasKid {
		for _, s := range sets {
			if k, ok := s.LookupKeyID(kid); ok {
				return k, nil
			}
		}
		return nil, fmt.Errorf("no key with kid %q", kid)
	}
	var only jwk.Key
	n := 0
	for _, s := range sets {
		n += s.Len()
		if s.Len() == 1 {
			only, _ = s.Key(0)
		}
	}
	if n != 1 {
		return nil, fmt.Errorf("token has no kid and the key sets hold %d keys", n)
	}
	return only, nil
}

// keyProvider chooses the verification key from the token header, after
// checking the header's alg against the allow-list. The key is never
// chosen by anything else in the token, so jku, x5u and embedded jwk
// headers are ignored.
func (v *jwtVerifier) keyProvider(ctx context.Context) jws.KeyProvider {
	return jws.KeyProviderFunc(func(_ context.Context, sink jws.KeySink, sig *jws.Signature, _ *jws.Message) error {
		hdr := sig.ProtectedHeaders()
		alg, ok := hdr.Algorithm()
		if !ok {
			return errors.New("token header has no alg")
		}
		if alg == jwa.NoSignature() || !v.allowed[alg] {
			return fmt.Errorf("algorithm %q is not allowed", alg)
		}
		kid, hasKid := hdr.KeyID()
		key, err := findKey(v.sets(ctx), kid, hasKid)
		if err != nil && hasKid && v.refresh(ctx) {
			// An IdP rotating keys signs with the new key before our
			// cached set has it.
			key, err = findKey(v.sets(ctx), kid, hasKid)
		}
		if err != nil {
			return err
		}
		if use, ok := key.KeyUsage(); ok && use != "" && use != jwk.ForSignature.String() {
			return fmt.Errorf("key %q is for %q, not signatures", kid, use)
		}
		if ka, ok := key.Algorithm(); ok && ka.String() != alg.String() {
			return fmt.Errorf("key %q is for %s, token says %s", kid, ka, alg)
		}
		// An HMAC alg with a public key would make the public key the
		// shared secret: the classic algorithm-confusion forgery.
		if alg.IsSymmetric() != (key.KeyType() == jwa.OctetSeq()) {
			return fmt.Errorf("algorithm %s does not fit key type %s", alg, key.KeyType())
		}
		sink.Key(alg, key)
		return nil
	})
}

func (v *jwtVerifier) verify(ctx context.Context, token []byte) (policy.Principal, error) {
	tok, err := jwt.Parse(token,
		jwt.WithKeyProvider(v.keyProvider(ctx)),
		jwt.WithValidate(true),
		jwt.WithContext(ctx),
		jwt.WithClock(jwt.ClockFunc(v.now)),
		jwt.WithAcceptableSkew(v.cfg.Leeway),
		// A token without exp would never expire.
		jwt.WithRequiredClaim(jwt.ExpirationKey),
		jwt.WithValidator(jwt.ValidatorFunc(v.checkIssuerAudience)),
	)
	if err != nil {
		return policy.Principal{}, fmt.Errorf("jwt: %w", err)
	}
	return principalFromClaims(tok, v.cfg.PrincipalClaim, v.cfg.GroupsClaim)
}

func (v *jwtVerifier) checkIssuerAudience(_ context.Context, tok jwt.Token) error {
	iss, _ := tok.Issuer()
	if !slices.Contains(v.cfg.Issuers, iss) {
		return fmt.Errorf("issuer %q is not accepted", iss)
	}
	aud, _ := tok.Audience()
	for _, a := range aud {
		if slices.Contains(v.cfg.Audiences, a) {
			return nil
		}
	}
	return fmt.Errorf("audience %q names none of the accepted audiences", aud)
}

// principalFromClaims reads the principal's ID and groups. A groups claim
// of the wrong shape fails the token rather than being dropped: dropping
// it could silently change what a policy grants.
func principalFromClaims(tok jwt.Token, idClaim, groupsClaim string) (policy.Principal, error) {
	var id string
	if err := tok.Get(idClaim, &id); err != nil || id == "" {
		return policy.Principal{}, fmt.Errorf("claim %q must be a non-empty string", idClaim)
	}
	groups := []string{}
	if tok.Has(groupsClaim) {
		var raw any
		if err := tok.Get(groupsClaim, &raw); err != nil {
			return policy.Principal{}, fmt.Errorf("claim %q: %w", groupsClaim, err)
		}
		list, ok := raw.([]any)
		if !ok {
			return policy.Principal{}, fmt.Errorf("claim %q must be an array of strings", groupsClaim)
		}
		for _, g := range list {
			s, ok := g.(string)
			if !ok {
				return policy.Principal{}, fmt.Errorf("claim %q must be an array of strings", groupsClaim)
			}
			groups = append(groups, s)
		}
	}
	return policy.Principal{ID: id, Groups: groups}, nil
}
