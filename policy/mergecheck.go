package policy

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"
)

// MergeCheckQuery is the rule merge validation asks the active bundle
// about a merge candidate (package mergecheck): the input is the merge
// summary document (merge/mergecheck/README.md), the rule must yield
// {"allow": bool, "reasons": [string]} like the authorization decision.
// The default bundle defines it in policy/defaultbundle/floe/merge.
const MergeCheckQuery = "data.floe.merge.check"

var mergeCheckRef = ast.MustParseRef(MergeCheckQuery)

// MergeCheckDecision is the active bundle's answer about one merge
// summary.
type MergeCheckDecision struct {
	// Defined is false when the bundle has no MergeCheckQuery rule: it
	// says nothing about merges, and Allow is then true.
	Defined bool
	Allow   bool
	Reasons []string
	// Revision is the bundle revision that answered.
	Revision string
}

// mergeQuery is an activated bundle's merge check, compiled once.
type mergeQuery struct {
	once    sync.Once
	query   rego.PreparedEvalQuery
	defined bool
	err     error
}

// CheckMerge evaluates MergeCheckQuery on the active bundle with summary
// (a JSON document) as input. The error is for a summary that is not
// JSON and for evaluation faults; a rule that yields something else than
// a decision denies, with a reason saying so.
func (e *Engine) CheckMerge(ctx context.Context, summary []byte) (MergeCheckDecision, error) {
	a := e.active.Load()
	out := MergeCheckDecision{Revision: a.revision}
	a.merge.once.Do(func() {
		var compiler *ast.Compiler
		// Compiled apart from the decision query: bundle activation stays
		// as fast as before, and a bundle without merge rules costs one
		// compilation on the first check only.
		a.merge.query, a.merge.err = rego.New(
			rego.Query(MergeCheckQuery),
			rego.ParsedBundle(bundleName, a.bundle),
			rego.CompilerHook(func(c *ast.Compiler) { compiler = c }),
		).PrepareForEval(context.WithoutCancel(ctx))
		a.merge.defined = compiler != nil && len(compiler.GetRules(mergeCheckRef)) > 0
	})
	if a.merge.err != nil {
		return out, fmt.Errorf("compile %s (bundle revision %q): %w", MergeCheckQuery, a.revision, a.merge.err)
	}
	if !a.merge.defined {
		out.Allow = true
		return out, nil
	}
	out.Defined = true
	input, err := ast.ValueFromReader(bytes.NewReader(summary))
	if err != nil {
		return out, fmt.Errorf("merge summary: %w", err)
	}
	rs, err := a.merge.query.Eval(ctx, rego.EvalParsedInput(input), rego.EvalMetrics(noopMetrics))
	if err != nil {
		return out, fmt.Errorf("evaluate %s (bundle revision %q): %w", MergeCheckQuery, a.revision, err)
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("evaluate %s: %w", MergeCheckQuery, err)
	}
	var v any
	if len(rs) > 0 && len(rs[0].Expressions) > 0 {
		v = rs[0].Expressions[0].Value
	}
	out.Allow, out.Reasons = decodeMergeCheck(v)
	if !out.Allow && len(out.Reasons) == 0 {
		out.Reasons = []string{"denied by the merge check policy"}
	}
	return out, nil
}

func decodeMergeCheck(v any) (bool, []string) {
	bad := func(why string) (bool, []string) {
		return false, []string{reasonNoDecision + ": " + MergeCheckQuery + " " + why}
	}
	if v == nil {
		return bad("is undefined")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return bad("is not an object")
	}
	allow, ok := obj["allow"].(bool)
	if !ok {
		return bad(`has no boolean "allow"`)
	}
	reasons := []string{}
	if r, ok := obj["reasons"]; ok {
		arr, ok := r.([]any)
		if !ok {
			return bad(`has a "reasons" that is not an array`)
		}
		for _, x := range arr {
			s, ok := x.(string)
			if !ok {
				return bad(`has a non-string reason`)
			}
			reasons = append(reasons, s)
		}
	}
	return allow, reasons
}
