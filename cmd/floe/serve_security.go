package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/policy/authn"
	"github.com/floe-catalog/floe/server/assemble"
)

// securityFlags configure authentication and authorization.
type securityFlags struct {
	dev   bool
	authn assemble.Authn
	// jwtIssuers, jwtAudiences and jwtAlgorithms are comma-separated.
	jwtIssuers, jwtAudiences, jwtAlgorithms string

	policyOff           bool
	policy              assemble.Policy
	verificationKeyFile string
	decisionLog         string
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

// security validates the flags against the listen address and turns them
// into the security the composition root builds. Authorization is off
// (Policy nil) with --policy-off, and in dev mode without a bundle.
func (s *securityFlags) security(addr string) (assemble.Security, error) {
	if s.dev {
		if err := authn.CheckDevAddr(addr); err != nil {
			return assemble.Security{}, fmt.Errorf("--dev: %w", err)
		}
	} else if s.policyOff {
		return assemble.Security{}, errors.New("--policy-off needs --dev: outside dev mode every request is authorized")
	}
	sec := assemble.Security{Authn: s.authn, DecisionLog: s.decisionLog}
	sec.Authn.Dev = s.dev
	sec.Authn.JWT.Issuers = splitList(s.jwtIssuers)
	sec.Authn.JWT.Audiences = splitList(s.jwtAudiences)
	sec.Authn.JWT.Algorithms = splitList(s.jwtAlgorithms)
	if s.policyOff || (s.dev && s.policy.Bundle == "" && s.policy.BundleURL == "") {
		return sec, nil
	}
	opts := s.policy
	if s.verificationKeyFile != "" {
		key, err := os.ReadFile(s.verificationKeyFile)
		if err != nil {
			return assemble.Security{}, fmt.Errorf("--policy-verification-key-file: %w", err)
		}
		opts.VerificationKey = string(key)
	}
	sec.Policy = &opts
	return sec, nil
}

// explain names the flag behind a start-up error of a security service,
// and the way out of one that --dev would avoid.
func (s *securityFlags) explain(err error) error {
	se, ok := errors.AsType[*assemble.ServiceError](err)
	switch {
	case !ok:
		return err
	case se.Service == "authentication" && !s.dev:
		return fmt.Errorf("%w (or run with --dev on a loopback address for anonymous access)", err)
	case se.Service == "decision log":
		return fmt.Errorf("--policy-decision-log: %w", err)
	}
	return err
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
