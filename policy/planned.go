package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/floe-catalog/floe/policy/planeval"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
)

// Evaluators, for Options.Evaluator.
const (
	// EvaluatorAuto evaluates a bundle from its compiled plan
	// (policy/planeval) when the plan compiles and agrees with topdown on
	// every verification input, and with topdown otherwise.
	EvaluatorAuto = "auto"
	// EvaluatorTopdown always uses OPA's topdown evaluator.
	EvaluatorTopdown = "topdown"
)

// Names of the evaluator in use, for logs and metrics.
const (
	evaluatorPlan    = "plan"
	evaluatorTopdown = "topdown"
)

// planEntrypoint is DecisionQuery as a plan entrypoint path.
var planEntrypoint = strings.ReplaceAll(strings.TrimPrefix(DecisionQuery, "data."), ".", "/")

// compilePlan plans the bundle's decision and checks the plan against
// topdown (a.query) on verificationInputs. It returns the program, or nil
// and why the bundle must run on topdown.
func compilePlan(ctx context.Context, a *activeBundle, b *bundle.Bundle) (*planeval.Program, string) {
	policy, err := planeval.PlanBundle(ctx, b, planEntrypoint)
	if err != nil {
		return nil, err.Error()
	}
	data, err := ast.InterfaceToValue(b.Data)
	if err != nil {
		return nil, fmt.Sprintf("bundle data: %v", err)
	}
	prog, err := planeval.Compile(policy, planEntrypoint, data)
	if err != nil {
		return nil, err.Error()
	}
	for _, in := range verificationInputs() {
		if _, diff, _ := disagreement(ctx, a, prog, &in); diff != "" {
			if ctx.Err() != nil {
				return nil, ctx.Err().Error()
			}
			return nil, diff
		}
	}
	// The bundle's own tests say which inputs its authors care about.
	tests := bundleTestInputs(b)
	for _, in := range tests {
		if _, diff, _ := compareEvaluators(ctx, a, prog, in); diff != "" {
			if ctx.Err() != nil {
				return nil, ctx.Err().Error()
			}
			return nil, fmt.Sprintf("plan and topdown disagree on input %v of the bundle's tests: %s", in, diff)
		}
	}
	a.testInputs = len(tests)
	return prog, ""
}

// compareEvaluators decides an input document with topdown and with
// prog. It returns topdown's answer, and how the two answers differ (""
// when they give the same allow and reasons, or both fail).
func compareEvaluators(ctx context.Context, a *activeBundle, prog *planeval.Program, input ast.Value) (allow bool, diff string, err error) {
	ta, tr, terr := a.evalTopdown(ctx, input)
	pa, pr, perr := evalPlan(ctx, prog, input)
	if (terr != nil) == (perr != nil) && ta == pa && slices.Equal(tr, pr) {
		return ta, "", terr
	}
	return ta, fmt.Sprintf("topdown allow=%v reasons=%q err=%v, plan allow=%v reasons=%q err=%v", ta, tr, terr, pa, pr, perr), terr
}

// disagreement decides in with topdown and with prog. It returns
// topdown's answer, and how the two answers differ ("" when they give the
// same allow and reasons, or both fail).
func disagreement(ctx context.Context, a *activeBundle, prog *planeval.Program, in *Input) (allow bool, diff string, err error) {
	allow, diff, err = compareEvaluators(ctx, a, prog, in.astValue())
	if diff != "" {
		diff = fmt.Sprintf("plan and topdown disagree on %s by %q on %s %q: %s", in.Action, in.Principal.ID, in.Ref.Type, in.Ref.Name, diff)
	}
	return allow, diff, err
}

var resultKey = ast.StringTerm("result")

// evalPlan evaluates the decision with a compiled plan.
func evalPlan(ctx context.Context, prog *planeval.Program, input ast.Value) (bool, []string, error) {
	rs, err := prog.Eval(ctx, input)
	if err != nil {
		return false, nil, err
	}
	var decision *ast.Term
	if len(rs) > 0 {
		if obj, ok := rs[0].Value.(ast.Object); ok {
			decision = obj.Get(resultKey)
		}
	}
	allow, reasons := decodeDecision(decision)
	return allow, reasons, nil
}

// verificationActions are all the actions.
var verificationActions = []Action{
	ActionRead, ActionCreateRef, ActionAssignRef, ActionDeleteRef, ActionCommit,
	ActionMerge, ActionTransplant, ActionCreateNamespace, ActionDropNamespace,
	ActionWriteNamespace, ActionCreateTable, ActionDropTable, ActionWriteTable,
	ActionRenameTable, ActionCreateView, ActionDropView, ActionWriteView, ActionRenameView,
	ActionRetentionRef, ActionStorageRead, ActionStorageWrite,
}

// verificationInputs are the inputs a plan must decide exactly as topdown
// does before the engine uses it: every action on every kind of ref, by
// principals of each default group and none, with and without contents,
// including the shapes that should deny (anonymous, wrong version).
func verificationInputs() []Input {
	principals := []Principal{
		{ID: "alice"},
		{ID: "alice", Groups: []string{"analysts"}},
		{ID: "pat", Groups: []string{"publishers", "finance"}},
		{ID: "ivy", Groups: []string{"ingest"}},
		{ID: "root", Groups: []string{"admins"}},
		{ID: "", Anonymous: true},
		{ID: "dev", Anonymous: true, Groups: []string{"admins", "publishers", "ingest"}},
	}
	refs := []Ref{
		{Name: "main", Type: RefBranch},
		{Name: "users/alice/x", Type: RefBranch},
		{Name: "users/bob/x", Type: RefBranch},
		{Name: "users/", Type: RefBranch},
		{Name: "ingest/daily", Type: RefBranch},
		{Name: "dev", Type: RefBranch},
		{Name: "v1", Type: RefTag},
		{Name: "", Type: RefDetached},
	}
	contents := [][]Content{
		nil,
		{{Key: []string{"sales", "orders"}, Type: TypeTable, Change: ChangeUpdate,
			Iceberg: &IcebergChange{Operations: []string{"append"}, Updates: []string{"add-snapshot"}}}},
		{{Key: []string{"sales"}, Type: TypeNamespace, Change: ChangeCreate},
			{Key: []string{"finance", "ledger"}, Change: ChangeDelete}},
	}
	var out []Input
	i := 0
	for _, action := range verificationActions {
		for _, ref := range refs {
			in := Input{
				Version:   InputVersion,
				Principal: principals[i%len(principals)],
				Action:    action,
				API:       []string{"iceberg", "nessie"}[i%2],
				Ref:       ref,
				Contents:  contents[i%len(contents)],
			}
			if action == ActionStorageRead || action == ActionStorageWrite {
				in.Storage = &StorageRequest{Provider: "s3", Method: "PUT", Operation: "put-object", Bucket: "lake",
					Key: "wh/sales/orders-1/data/f.parquet", Table: []string{"sales", "orders"}, TableLocation: "s3://lake/wh/sales/orders-1"}
			}
			if action == ActionMerge || action == ActionTransplant {
				// Merges read from ref and write to a rotating target.
				target := refs[(i/len(principals))%len(refs)]
				in.Target = &target
				in.Ref = Ref{Name: "users/alice/x", Type: RefBranch}
			}
			out = append(out, in)
			i++
		}
	}
	// Inputs the policy must refuse outright.
	out = append(out,
		Input{Version: InputVersion + 1, Principal: principals[2], Action: ActionRead, API: "iceberg", Ref: refs[0]},
		Input{Principal: principals[0], Action: ActionRead, API: "iceberg", Ref: refs[0], RequestID: "r-1"},
	)
	return out
}
