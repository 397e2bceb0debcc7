package planeval_test

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/policy/planeval"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	opacases "github.com/open-policy-agent/opa/v1/test/cases"
	"github.com/open-policy-agent/opa/v1/test/cases/testdata"
	"github.com/open-policy-agent/opa/v1/util"
)

// TestOPACompliance runs OPA's own evaluation test cases, the suite OPA
// keeps for topdown, Wasm and the IR evaluators of other languages, on
// every case planeval can take: a query of the form data.<path> = x,
// without strict builtin errors or environment variables, whose plan
// compiles. Each answer must be the one the case records.
func TestOPACompliance(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs OPA's evaluation suite")
	}
	var all []opacases.TestCase
	err := fs.WalkDir(testdata.V1, "v1", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || (path.Ext(p) != ".yaml" && path.Ext(p) != ".json") {
			return err
		}
		bs, err := fs.ReadFile(testdata.V1, p)
		if err != nil {
			return err
		}
		var set opacases.Set
		if err := util.Unmarshal(bs, &set); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		for _, c := range set.Cases {
			c.Filename = p
			all = append(all, c)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	skipped := map[string]int{}
	ran := 0
	for _, tc := range all {
		why := runComplianceCase(t, tc)
		if why != "" {
			skipped[why]++
			continue
		}
		ran++
	}
	t.Logf("%d of %d cases ran; skipped: %v", ran, len(all), skipped)
	// The suite has about 2,000 cases and planeval runs most of them; a
	// drop means the harness stopped finding them, not that they pass.
	if ran < 1000 {
		t.Fatalf("only %d cases ran", ran)
	}
}

var dataQuery = regexp.MustCompile(`^data\.([A-Za-z0-9_.]+) = ([a-z]+)$`)

// runComplianceCase runs one case and reports a failure with t.Errorf; it
// returns why the case was skipped, or "" if it ran.
func runComplianceCase(t *testing.T, tc opacases.TestCase) string {
	m := dataQuery.FindStringSubmatch(tc.Query)
	switch {
	case m == nil, m[2] == "input":
		return "query shape"
	case tc.StrictError:
		return "strict errors"
	case len(tc.Env) > 0:
		return "environment"
	}
	entrypoint := strings.ReplaceAll(m[1], ".", "/")
	b := bundle.Bundle{
		Manifest: bundle.Manifest{Revision: "case", Roots: &[]string{""}},
		Data:     map[string]any{},
	}
	if tc.Data != nil {
		b.Data = *tc.Data
	}
	for i, src := range tc.Modules {
		name := fmt.Sprintf("/case/m%d.rego", i)
		parsed, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			return "parse"
		}
		b.Modules = append(b.Modules, bundle.ModuleFile{URL: name, Path: name, Raw: []byte(src), Parsed: parsed})
	}
	policy, err := planeval.PlanBundle(context.Background(), &b, entrypoint)
	if err != nil {
		return "planner"
	}
	data, err := ast.InterfaceToValue(b.Data)
	if err != nil {
		return "data"
	}
	prog, err := planeval.Compile(policy, entrypoint, data)
	if err != nil {
		msg := err.Error()
		if i := strings.Index(msg, "unsupported plan: "); i >= 0 {
			msg = msg[i+len("unsupported plan: "):]
		}
		return "unsupported: " + msg
	}
	var input ast.Value
	switch {
	case tc.InputTerm != nil:
		term, err := ast.ParseTerm(*tc.InputTerm)
		if err != nil {
			return "input term"
		}
		input = term.Value
	case tc.Input != nil:
		if input, err = ast.InterfaceToValue(*tc.Input); err != nil {
			return "input"
		}
	}
	rs, err := prog.Eval(context.Background(), input)
	var got *ast.Term
	if err == nil && len(rs) > 0 {
		got = rs[0].Value.(ast.Object).Get(ast.StringTerm("result"))
	}
	where := fmt.Sprintf("%s: %s", tc.Filename, tc.Note)
	switch {
	case tc.WantError != nil || tc.WantErrorCode != nil:
		if err == nil {
			t.Errorf("%s: got %v, want an error", where, got)
		}
	case err != nil:
		t.Errorf("%s: %v", where, err)
	case tc.WantResult != nil:
		want := *tc.WantResult
		if len(want) == 0 {
			if got != nil {
				t.Errorf("%s: got %v, want undefined", where, got)
			}
			return ""
		}
		w, err := ast.InterfaceToValue(want[0][m[2]])
		if err != nil {
			t.Fatalf("%s: want: %v", where, err)
		}
		if got == nil {
			t.Errorf("%s: undefined, want %v", where, w)
			return ""
		}
		if !complianceEqual(got.Value, w, tc.SortBindings) {
			t.Errorf("%s: got %v, want %v", where, got, w)
		}
	case tc.WantDefined != nil:
		if (got != nil) != *tc.WantDefined {
			t.Errorf("%s: defined %v, want %v", where, got != nil, *tc.WantDefined)
		}
	}
	return ""
}

// complianceEqual compares as the suite means: expected values come from
// JSON, so a set is written as an array, and with sort_bindings an array's
// order does not matter.
func complianceEqual(got, want ast.Value, unordered bool) bool {
	if ast.ValueEqual(got, want) {
		return true
	}
	g, err := ast.JSON(got)
	if err != nil {
		return false
	}
	gv, err := ast.InterfaceToValue(g)
	if err != nil {
		return false
	}
	if ast.ValueEqual(gv, want) {
		return true
	}
	if ga, ok := gv.(*ast.Array); ok && unordered {
		if wa, ok := want.(*ast.Array); ok && ga.Len() == wa.Len() {
			gs, ws := make([]*ast.Term, ga.Len()), make([]*ast.Term, wa.Len())
			for i := range ga.Len() {
				gs[i], ws[i] = ga.Elem(i), wa.Elem(i)
			}
			slices.SortFunc(gs, func(a, b *ast.Term) int { return a.Value.Compare(b.Value) })
			slices.SortFunc(ws, func(a, b *ast.Term) int { return a.Value.Compare(b.Value) })
			return ast.ValueEqual(ast.NewArray(gs...), ast.NewArray(ws...))
		}
	}
	return false
}
