package policy

import (
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
)

// maxTestInputs bounds how many inputs of a bundle's own tests verify its
// plan at activation; each costs two evaluations.
const maxTestInputs = 2000

// bundleTestInputs returns the input documents a bundle's own Rego tests
// decide: the value of every `with input as <value>` in a test rule
// (test_* or todo_test_*, as OPA's tester finds them) whose value is a
// constant: no variables, references, calls or comprehensions. Inputs
// built by functions (`with input as req(alice, "read")`, as the default
// bundle's tests do) are left out: evaluating them would need the tests'
// own evaluation. Duplicates are dropped.
func bundleTestInputs(b *bundle.Bundle) []ast.Value {
	seen := map[string]bool{}
	var out []ast.Value
	for _, mf := range b.Modules {
		if mf.Parsed == nil {
			continue
		}
		for _, r := range mf.Parsed.Rules {
			if !isTestRule(r) {
				continue
			}
			ast.NewGenericVisitor(func(x any) bool {
				w, ok := x.(*ast.With)
				if !ok || len(out) >= maxTestInputs {
					return len(out) >= maxTestInputs
				}
				target, ok := w.Target.Value.(ast.Ref)
				if !ok || !target.Equal(ast.InputRootRef) || !ast.IsConstant(w.Value.Value) {
					return false
				}
				if k := w.Value.String(); !seen[k] {
					seen[k] = true
					out = append(out, w.Value.Value)
				}
				return false
			}).Walk(r)
		}
	}
	return out
}

// isTestRule reports whether OPA's tester runs r.
func isTestRule(r *ast.Rule) bool {
	for _, t := range r.Head.Ref() {
		var name string
		switch v := t.Value.(type) {
		case ast.Var:
			name = string(v)
		case ast.String:
			name = string(v)
		}
		if strings.HasPrefix(name, "test_") || strings.HasPrefix(name, "todo_test_") {
			return true
		}
	}
	return false
}
