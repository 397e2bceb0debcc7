package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/gorilla/mux"
	"github.com/spf13/pflag"

	"github.com/floe-catalog/floe/internal/authorize"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/policy/authn"
	"github.com/floe-catalog/floe/server"
)

// securityFlags configure authentication and authorization.
type securityFlags struct {
	dev   bool
	authn authn.Config
	// jwtIssuers, jwtAudiences and jwtAlgorithms are comma-separated.
	jwtIssuers, jwtAudiences, jwtAlgorithms string

	policyOff            bool
	policy               policy.Options
	verificationKeyFile  string
	decisionLog          string
	decisionLogCloseFunc func() error
}

func (s *securityFlags) register(f *pflag.FlagSet) {
	f.BoolVar(&s.dev, "dev", false, "development mode: requests without a token are served as the anonymous principal, and authorization is off unless a policy bundle is given; only a loopback --addr is accepted")
	f.StringVar(&s.authn.TokenFile, "auth-token-file", "", "JSON file of static bearer tokens, stored as SHA-256 hashes with principal and groups (floe auth hash-token)")
	f.StringVar(&s.authn.JWT.JWKSFile, "auth-jwks-file", "", "JSON Web Key Set file verifying JWT bearer tokens")
	f.StringVar(&s.authn.JWT.JWKSURL, "auth-jwks-url", "", "URL of a JSON Web Key Set verifying JWT bearer tokens")
	f.StringVar(&s.jwtIssuers, "auth-jwt-issuer", "", "accepted JWT issuers (iss), comma-separated; required with a JWKS")
	f.StringVar(&s.jwtAudiences, "auth-jwt-audience", "", "accepted JWT audiences (aud), comma-separated; required with a JWKS")
	f.StringVar(&s.jwtAlgorithms, "auth-jwt-algorithms", "", "allowed JWT signature algorithms, comma-separated (default RS256,ES256,EdDSA)")
	f.StringVar(&s.authn.JWT.PrincipalClaim, "auth-jwt-principal-claim", "", "JWT claim naming the principal (default sub)")
	f.StringVar(&s.authn.JWT.GroupsClaim, "auth-jwt-groups-claim", "", "JWT claim listing the principal's groups (default groups)")
	f.StringVar(&s.authn.OAuth.ClientsFile, "auth-oauth-clients-file", "", "JSON file of OAuth clients (hashed secrets) allowed to get tokens from POST /v1/oauth/tokens")
	f.StringVar(&s.authn.OAuth.SigningKeyFile, "auth-oauth-signing-key-file", "", "PEM Ed25519 private key signing issued tokens; without it a key is generated at start and tokens die with the process")
	f.DurationVar(&s.authn.OAuth.TokenTTL, "auth-oauth-token-ttl", 0, "lifetime of tokens issued by POST /v1/oauth/tokens (default 1h)")

	f.StringVar(&s.policy.Bundle, "policy-bundle", "", "OPA bundle directory or .tar.gz, reloaded when it changes (default: the bundle built into floe)")
	f.StringVar(&s.policy.BundleURL, "policy-bundle-url", "", "URL of an OPA bundle on a bundle server, polled with ETag")
	f.DurationVar(&s.policy.PollInterval, "policy-poll-interval", 0, "how often the policy bundle is checked for changes (default 2s for a file, 30s for a URL)")
	f.StringVar(&s.verificationKeyFile, "policy-verification-key-file", "", "public key (PEM) or HMAC secret file; when set, only bundles signed with it are accepted")
	f.StringVar(&s.policy.VerificationKeyID, "policy-verification-key-id", "", "key id of the bundle verification key (default \"default\")")
	f.StringVar(&s.policy.VerificationAlg, "policy-verification-alg", "", "signature algorithm of signed bundles (default RS256)")
	f.IntVar(&s.policy.DecisionCacheSize, "policy-decision-cache-size", 0, "decisions of this many distinct inputs are remembered per bundle activation (0: 4096; negative: off); bundles using time, randomness or http.send are never cached")
	f.StringVar(&s.policy.Evaluator, "policy-evaluator", policy.EvaluatorAuto, "how decisions are evaluated: auto (from the bundle's compiled plan when it agrees with OPA's topdown evaluator on the verification inputs, else topdown) or topdown")
	f.StringVar(&s.decisionLog, "policy-decision-log", "", "write every authorization decision as a JSON line to this file, or - for standard output")
	f.BoolVar(&s.policyOff, "policy-off", false, "turn authorization off (only with --dev)")
}

// setup validates the flags against the listen address and returns the
// authenticator and policy engine the APIs use; engine is nil when
// authorization is off. Both live until ctx ends.
func (s *securityFlags) setup(ctx context.Context, addr string, logger *slog.Logger, env server.Env) (*authn.Authenticator, *policy.Engine, error) {
	if s.dev {
		if err := authn.CheckDevAddr(addr); err != nil {
			return nil, nil, fmt.Errorf("--dev: %w", err)
		}
	} else if s.policyOff {
		return nil, nil, errors.New("--policy-off needs --dev: outside dev mode every request is authorized")
	}
	s.authn.Dev = s.dev
	s.authn.JWT.Issuers = splitList(s.jwtIssuers)
	s.authn.JWT.Audiences = splitList(s.jwtAudiences)
	s.authn.JWT.Algorithms = splitList(s.jwtAlgorithms)
	auth, err := authn.New(ctx, s.authn, logger, env.Metrics)
	if err != nil {
		if !s.dev {
			return nil, nil, fmt.Errorf("%w (or run with --dev on a loopback address for anonymous access)", err)
		}
		return nil, nil, err
	}
	if s.policyOff || (s.dev && s.policy.Bundle == "" && s.policy.BundleURL == "") {
		logger.Warn("authorization is off: every request is allowed (dev mode without a policy bundle)")
		return auth, nil, nil
	}
	if s.verificationKeyFile != "" {
		key, err := os.ReadFile(s.verificationKeyFile)
		if err != nil {
			return nil, nil, fmt.Errorf("--policy-verification-key-file: %w", err)
		}
		s.policy.VerificationKey = string(key)
	}
	switch s.decisionLog {
	case "":
	case "-":
		s.policy.DecisionLog = os.Stdout
	default:
		f, err := os.OpenFile(s.decisionLog, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("--policy-decision-log: %w", err)
		}
		s.policy.DecisionLog = f
		s.decisionLogCloseFunc = f.Close
	}
	s.policy.Logger = logger
	s.policy.Metrics = env.Metrics
	engine, err := policy.New(ctx, s.policy)
	if err != nil {
		s.closeLog()
		return nil, nil, fmt.Errorf("policy: %w", err)
	}
	go func() {
		<-ctx.Done()
		_ = engine.Close()
		s.closeLog()
	}()
	logger.Info("authorization on", "policy_revision", engine.Revision())
	return auth, engine, nil
}

func (s *securityFlags) closeLog() {
	if s.decisionLogCloseFunc != nil {
		_ = s.decisionLogCloseFunc()
	}
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// security is what the API mounts share once setup has run.
type security struct {
	auth   *authn.Authenticator
	engine *policy.Engine // nil: authorization off
}

// principalID names a request's caller for commit records.
func principalID(r *http.Request) string {
	if p, ok := authn.FromContext(r.Context()); ok {
		return p.ID
	}
	return "anonymous"
}

// guard returns the API's guard, nil when authorization is off.
func (sec *security) guard(api string) *authorize.Guard {
	if sec.engine == nil {
		return nil
	}
	return authorize.NewGuard(sec.engine, api, authn.PrincipalOf, func(r *http.Request) string {
		return server.RequestID(r.Context())
	})
}

// securityMount sets up authentication and authorization, fills sec for
// the mounts after it, and serves the OAuth token endpoint.
func securityMount(ctx context.Context, flags *securityFlags, addr string, logger *slog.Logger, sec *security) server.Mount {
	return func(r *mux.Router, env server.Env) error {
		auth, engine, err := flags.setup(ctx, addr, logger, env)
		if err != nil {
			return err
		}
		sec.auth, sec.engine = auth, engine
		r.Handle("/v1/oauth/tokens", auth.TokenHandler()).Methods(http.MethodPost)
		return nil
	}
}
