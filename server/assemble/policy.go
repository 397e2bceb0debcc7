package assemble

import (
	"time"

	"github.com/floe-catalog/floe/policy"
)

// Policy is the policy engine's plain settings: policy.Options without
// its live fields (Logger, Metrics, DecisionLog, OnActivate), which Build
// sets from the process. Each field means what policy.Options' field of
// the same name does; TestPolicyMirrorsOptions keeps the two in step.
type Policy struct {
	Bundle            string
	BundleURL         string
	PollInterval      time.Duration
	HTTPStartTimeout  time.Duration
	VerificationKey   string
	VerificationKeyID string
	VerificationAlg   string
	DecisionCacheSize int
	Evaluator         string
	DecisionLogBuffer int
}

// Options maps the settings to the engine's options; the caller sets the
// live ones.
func (p Policy) Options() policy.Options {
	return policy.Options{
		Bundle: p.Bundle, BundleURL: p.BundleURL, PollInterval: p.PollInterval, HTTPStartTimeout: p.HTTPStartTimeout,
		VerificationKey: p.VerificationKey, VerificationKeyID: p.VerificationKeyID, VerificationAlg: p.VerificationAlg,
		DecisionCacheSize: p.DecisionCacheSize, Evaluator: p.Evaluator, DecisionLogBuffer: p.DecisionLogBuffer,
	}
}
