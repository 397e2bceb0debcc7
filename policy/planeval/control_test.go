package planeval_test

import (
	"context"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/policy/planeval"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/ir"
)

// The planner rarely emits breaks that leave scans and negations, so the
// Rego cases do not pin those levels down; these hand-written plans do.
// Their meaning follows OPA's Wasm compiler: a scan body is the loop's
// level, with one more level around the loop.

func local(l int) ir.Operand       { return ir.Operand{Value: ir.Local(l)} }
func str(i int) ir.Operand         { return ir.Operand{Value: ir.StringIndex(i)} }
func block(s ...ir.Stmt) *ir.Block { return &ir.Block{Stmts: s} }

// evalPlan compiles blocks as the only plan, with the static strings
// "set", "marker", "x", and returns the result set.
func evalPlan(t *testing.T, input string, blocks ...*ir.Block) []*ast.Term {
	t.Helper()
	policy := &ir.Policy{
		Static: &ir.Static{Strings: []*ir.StringConst{{Value: "set"}, {Value: "marker"}, {Value: "x"}}},
		Plans:  &ir.Plans{Plans: []*ir.Plan{{Name: "test", Blocks: blocks}}},
		Funcs:  &ir.Funcs{},
	}
	prog, err := planeval.Compile(policy, "test", nil)
	if err != nil {
		t.Fatal(err)
	}
	var in ast.Value
	if input != "" {
		in = ast.MustParseTerm(input).Value
	}
	rs, err := prog.Eval(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func resultsString(rs []*ast.Term) string {
	return ast.NewArray(rs...).String()
}

func TestScanBreakLevels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		index uint32
		want  string
	}{
		{0, `[{"set": {1, 2, 3}}, "marker"]`}, // next element
		{1, `[{"set": {1}}, "marker"]`},       // ends the scan
		{2, `["marker"]`},                     // leaves the block holding the scan
	} {
		rs := evalPlan(t, `[1, 2, 3]`,
			block(
				&ir.MakeSetStmt{Target: 2},
				&ir.ScanStmt{Source: 0, Key: 3, Value: 4, Block: block(
					&ir.SetAddStmt{Value: local(4), Set: 2},
					&ir.BreakStmt{Index: tc.index},
				)},
				&ir.MakeObjectStmt{Target: 5},
				&ir.ObjectInsertStmt{Key: str(0), Value: local(2), Object: 5},
				&ir.ResultSetAddStmt{Value: 5},
			),
			block(
				&ir.AssignVarStmt{Source: str(1), Target: 6},
				&ir.ResultSetAddStmt{Value: 6},
			),
		)
		if got := resultsString(rs); got != tc.want {
			t.Errorf("break %d in a scan body: %s, want %s", tc.index, got, tc.want)
		}
	}
}

func TestNotBreakLevels(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body *ir.Block
		want string
	}{
		{"body holds", block(&ir.NopStmt{}), `["marker"]`},
		{"body fails", block(&ir.BreakStmt{Index: 0}), `["x", "marker"]`},
		{"body leaves the enclosing block", block(&ir.BreakStmt{Index: 1}), `["marker"]`},
		{"undefined dot in body", block(&ir.DotStmt{Source: local(0), Key: str(2), Target: 3}), `["x", "marker"]`},
	} {
		rs := evalPlan(t, `{"y": 1}`,
			block(
				&ir.NotStmt{Block: tc.body},
				&ir.AssignVarStmt{Source: str(2), Target: 4},
				&ir.ResultSetAddStmt{Value: 4},
			),
			block(
				&ir.AssignVarStmt{Source: str(1), Target: 6},
				&ir.ResultSetAddStmt{Value: 6},
			),
		)
		if got := resultsString(rs); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestBlockBreakLevels(t *testing.T) {
	t.Parallel()
	// A BlockStmt's blocks run in turn; break 0 ends one of them, break 1
	// also leaves the block holding the BlockStmt.
	for _, tc := range []struct {
		index uint32
		want  string
	}{
		{0, `["x", "x", "marker"]`},
		{1, `["x", "marker"]`},
	} {
		rs := evalPlan(t, ``,
			block(
				&ir.AssignVarStmt{Source: str(2), Target: 4},
				&ir.BlockStmt{Blocks: []*ir.Block{
					block(&ir.ResultSetAddStmt{Value: 4}, &ir.BreakStmt{Index: tc.index}, &ir.ResultSetAddStmt{Value: 4}),
					block(&ir.ResultSetAddStmt{Value: 4}),
				}},
			),
			block(
				&ir.AssignVarStmt{Source: str(1), Target: 6},
				&ir.ResultSetAddStmt{Value: 6},
			),
		)
		if got := resultsString(rs); got != tc.want {
			t.Errorf("break %d: %s, want %s", tc.index, got, tc.want)
		}
	}
}

func TestRecursivePlanRefused(t *testing.T) {
	t.Parallel()
	call := func(name string) *ir.CallStmt {
		return &ir.CallStmt{Func: name, Args: []ir.Operand{local(0), local(1)}, Result: 2}
	}
	fn := func(name, calls string) *ir.Func {
		return &ir.Func{Name: name, Params: []ir.Local{0, 1}, Return: 2,
			Blocks: []*ir.Block{block(&ir.NotStmt{Block: block(call(calls))}, &ir.ReturnLocalStmt{Source: 2})}}
	}
	policy := &ir.Policy{
		Static: &ir.Static{},
		Plans:  &ir.Plans{Plans: []*ir.Plan{{Name: "test", Blocks: []*ir.Block{block(call("a"))}}}},
		Funcs:  &ir.Funcs{Funcs: []*ir.Func{fn("a", "b"), fn("b", "c"), fn("c", "a")}},
	}
	_, err := planeval.Compile(policy, "test", nil)
	if err == nil || !strings.Contains(err.Error(), "calls itself") {
		t.Fatalf("Compile of a recursive plan: %v, want a refusal", err)
	}
}

func TestMalformedPlansRefused(t *testing.T) {
	t.Parallel()
	for name, s := range map[string]ir.Stmt{
		"string index out of range": &ir.AssignVarStmt{Source: str(7), Target: 2},
		"negative local":            &ir.AssignVarStmt{Source: local(-1), Target: 2},
		"negative target":           &ir.MakeObjectStmt{Target: -3},
	} {
		policy := &ir.Policy{
			Static: &ir.Static{Strings: []*ir.StringConst{{Value: "x"}}},
			Plans:  &ir.Plans{Plans: []*ir.Plan{{Name: "test", Blocks: []*ir.Block{block(s)}}}},
			Funcs:  &ir.Funcs{},
		}
		if _, err := planeval.Compile(policy, "test", nil); err == nil {
			t.Errorf("%s: Compile accepted the plan", name)
		}
	}
}
