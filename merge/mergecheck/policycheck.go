package mergecheck

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// PolicyEvaluator evaluates the merge rules of the active policy bundle on
// a merge summary (JSON). *policy.Engine implements it (CheckMerge, over
// data.floe.merge.check); the interface keeps OPA out of this package.
type PolicyEvaluator interface {
	CheckMerge(ctx context.Context, summary []byte) (PolicyDecision, error)
}

// PolicyDecision is a policy's answer about one merge summary; it has the
// fields of policy.MergeCheckDecision, so an adapter is a conversion.
type PolicyDecision struct {
	// Defined is false when the bundle has no merge rules.
	Defined  bool
	Allow    bool
	Reasons  []string
	Revision string
}

// checkPolicy asks the policy about the summary.
func (v *Validator) checkPolicy(ctx context.Context, s *Summary) (CheckResult, error) {
	if v.opts.Policy == nil {
		return CheckResult{Name: CheckPolicy, Passed: true, Reason: "no policy engine is configured"}, nil
	}
	doc, err := json.Marshal(s)
	if err != nil {
		return CheckResult{}, fmt.Errorf("encode the merge summary: %w", err)
	}
	d, err := v.opts.Policy.CheckMerge(ctx, doc)
	if err != nil {
		return CheckResult{}, fmt.Errorf("policy check: %w", err)
	}
	switch {
	case !d.Defined:
		return CheckResult{Name: CheckPolicy, Passed: true, Reason: fmt.Sprintf("the policy bundle (revision %q) has no merge rules (data.floe.merge.check)", d.Revision)}, nil
	case !d.Allow:
		return CheckResult{Name: CheckPolicy, Reason: strings.Join(d.Reasons, "; ")}, nil
	}
	reason := fmt.Sprintf("allowed by the policy bundle (revision %q)", d.Revision)
	if len(d.Reasons) > 0 {
		reason += ": " + strings.Join(d.Reasons, "; ")
	}
	return CheckResult{Name: CheckPolicy, Passed: true, Reason: reason}, nil
}
