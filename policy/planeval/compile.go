package planeval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/compile"
	"github.com/open-policy-agent/opa/v1/ir"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// ErrUnsupported marks a plan this package cannot evaluate exactly; the
// caller should evaluate the policy with topdown instead.
var ErrUnsupported = errors.New("planeval: unsupported plan")

// Program is a compiled plan, ready to evaluate. It is immutable and safe
// for concurrent use.
type Program struct {
	funcs  []*function
	blocks [][]stmt // the plan's blocks
	nlocal int      // locals the plan's blocks use
	data   *ast.Term
	// pool recycles evaluation state; see state.go.
	pool statePool
}

// function is a planned function: a rule, or a Rego function with
// arguments.
type function struct {
	name    string
	params  []int
	ret     int
	blocks  [][]stmt
	nlocal  int
	memoize bool // rules (input and data only) are evaluated once per Eval
}

// PlanBundle plans entrypoint (a path such as "floe/authz/decision") of
// the bundle's policies. Test modules (*_test.rego) are left out: they are
// not part of the decision, and the planner's type checker rejects some
// test idioms that topdown accepts.
func PlanBundle(ctx context.Context, b *bundle.Bundle, entrypoint string) (*ir.Policy, error) {
	cp := *b
	cp.Modules = nil
	for _, m := range b.Modules {
		if !strings.HasSuffix(m.Path, "_test.rego") {
			cp.Modules = append(cp.Modules, m)
		}
	}
	c := compile.New().
		WithTarget(compile.TargetPlan).
		WithBundle(&cp).
		WithEntrypoints(entrypoint)
	if err := c.Build(ctx); err != nil {
		return nil, fmt.Errorf("plan %s: %w", entrypoint, err)
	}
	out := c.Bundle()
	if out == nil || len(out.PlanModules) != 1 {
		return nil, fmt.Errorf("plan %s: the planner produced no plan", entrypoint)
	}
	var p ir.Policy
	if err := json.Unmarshal(out.PlanModules[0].Raw, &p); err != nil {
		return nil, fmt.Errorf("plan %s: decode: %w", entrypoint, err)
	}
	return &p, nil
}

// Compile prepares plan name of policy for evaluation against data, the
// base data document (the bundle's data). It returns an error wrapping
// ErrUnsupported for plans it cannot evaluate exactly.
func Compile(policy *ir.Policy, name string, data ast.Value) (*Program, error) {
	if policy.Plans == nil || policy.Static == nil {
		return nil, errors.New("planeval: policy has no plans")
	}
	var plan *ir.Plan
	for _, p := range policy.Plans.Plans {
		if p.Name == name {
			plan = p
		}
	}
	if plan == nil {
		return nil, fmt.Errorf("planeval: policy has no plan %q", name)
	}
	if data == nil {
		data = ast.NewObject()
	}
	c := &compiler{
		policy:  policy,
		strings: make([]*ast.Term, len(policy.Static.Strings)),
		funcIDs: map[string]int{},
	}
	for i, s := range policy.Static.Strings {
		c.strings[i] = ast.StringTerm(s.Value)
	}
	p := &Program{data: ast.NewTerm(data)}
	if policy.Funcs != nil {
		for i, f := range policy.Funcs.Funcs {
			c.funcIDs[f.Name] = i
			p.funcs = append(p.funcs, &function{
				name:    f.Name,
				memoize: len(f.Params) == 2,
			})
		}
		for i, f := range policy.Funcs.Funcs {
			if len(f.Params) < 2 {
				return nil, fmt.Errorf("planeval: function %s takes %d parameters, want input and data first", f.Name, len(f.Params))
			}
			fn := p.funcs[i]
			c.maxLocal = int(f.Return)
			for _, l := range f.Params {
				fn.params = append(fn.params, c.local(l))
			}
			fn.ret = c.local(f.Return)
			for _, b := range f.Blocks {
				sb, err := c.block(b)
				if err != nil {
					return nil, fmt.Errorf("function %s: %w", f.Name, err)
				}
				fn.blocks = append(fn.blocks, sb)
			}
			markDataRefs(fn.blocks, fn.params)
			fn.nlocal = c.maxLocal + 1
		}
	}
	c.maxLocal = int(ir.Data)
	for _, b := range plan.Blocks {
		sb, err := c.block(b)
		if err != nil {
			return nil, fmt.Errorf("plan %s: %w", name, err)
		}
		p.blocks = append(p.blocks, sb)
	}
	markDataRefs(p.blocks, []int{int(ir.Input), int(ir.Data)})
	if err := checkAcyclic(p.funcs); err != nil {
		return nil, err
	}
	p.nlocal = c.maxLocal + 1
	if c.err != nil {
		return nil, c.err
	}
	p.pool.init(p)
	return p, nil
}

// checkAcyclic refuses plans whose functions call themselves, directly or
// not. Rego forbids recursion and the planner never makes such a plan;
// evaluation relies on it (one locals slice per function), and a cycle
// would otherwise end in a stack overflow, which Go cannot recover from.
func checkAcyclic(funcs []*function) error {
	const (
		unvisited = iota
		visiting
		done
	)
	state := make([]int, len(funcs))
	var visit func(id int) error
	visit = func(id int) error {
		switch state[id] {
		case visiting:
			return fmt.Errorf("planeval: function %s calls itself", funcs[id].name)
		case done:
			return nil
		}
		state[id] = visiting
		for _, callee := range callees(funcs[id].blocks) {
			if err := visit(callee); err != nil {
				return err
			}
		}
		state[id] = done
		return nil
	}
	for id := range funcs {
		if err := visit(id); err != nil {
			return err
		}
	}
	return nil
}

// callees lists the functions the blocks call.
func callees(blocks [][]stmt) []int {
	var out []int
	eachStmt(blocks, func(s stmt) {
		if call, ok := s.(*callStmt); ok {
			out = append(out, call.fn)
		}
	})
	return out
}

// compiler translates IR statements into stmt values with every name and
// constant resolved, so evaluation does no lookups by name.
type compiler struct {
	policy   *ir.Policy
	strings  []*ast.Term
	funcIDs  map[string]int
	maxLocal int // highest local of the function being compiled
	// err is the first invalid local or operand met; block reports it,
	// so the statements need not check each operand.
	err error
}

func (c *compiler) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

func (c *compiler) local(l ir.Local) int {
	if l < 0 {
		// Checked here so that evaluation can index locals unguarded.
		c.fail(fmt.Errorf("planeval: negative local %d", l))
		return 0
	}
	if int(l) > c.maxLocal {
		c.maxLocal = int(l)
	}
	return int(l)
}

func (c *compiler) operand(o ir.Operand) operand {
	// Decoded plans hold pointers to values; planned ones hold values.
	val := o.Value
	switch v := val.(type) {
	case *ir.Local:
		val = *v
	case *ir.StringIndex:
		val = *v
	case *ir.Bool:
		val = *v
	}
	switch v := val.(type) {
	case ir.Local:
		return operand{local: c.local(v)}
	case ir.StringIndex:
		if int(v) < 0 || int(v) >= len(c.strings) {
			c.fail(fmt.Errorf("planeval: string index %d out of range", v))
			return operand{local: -1, term: ast.InternedNullTerm}
		}
		return operand{local: -1, term: c.strings[v]}
	case ir.Bool:
		return operand{local: -1, term: ast.InternedTerm(bool(v))}
	default:
		c.fail(fmt.Errorf("planeval: unknown operand %T", o.Value))
		return operand{local: -1, term: ast.InternedNullTerm}
	}
}

func (c *compiler) operands(os []ir.Operand) []operand {
	out := make([]operand, len(os))
	for i, o := range os {
		out[i] = c.operand(o)
	}
	return out
}

func (c *compiler) block(b *ir.Block) ([]stmt, error) {
	out := make([]stmt, 0, len(b.Stmts))
	for _, s := range b.Stmts {
		cs, err := c.stmt(s)
		if err != nil {
			return nil, err
		}
		if c.err != nil {
			return nil, c.err
		}
		out = append(out, cs)
	}
	return out, nil
}

func (c *compiler) blocks(bs []*ir.Block) ([][]stmt, error) {
	out := make([][]stmt, len(bs))
	for i, b := range bs {
		var err error
		if out[i], err = c.block(b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// unsupportedBuiltins need what only topdown provides (the clock, the
// network, tracing, the runtime) or are evaluated by topdown itself.
var unsupportedBuiltins = map[string]bool{
	"print":                  true,
	"internal.print":         true,
	"trace":                  true,
	"opa.runtime":            true,
	"io.jwt.decode_verify":   true,
	"io.jwt.encode_sign":     true,
	"io.jwt.encode_sign_raw": true,
	"crypto.x509.parse_and_verify_certificates":              true,
	"crypto.x509.parse_and_verify_certificates_with_options": true,
	"rego.metadata.chain":                                    true,
	"rego.metadata.rule":                                     true,
	"rego.parse_module":                                      true,
	"internal.test_case":                                     true,
}

func builtin(name string) (*ast.Builtin, topdown.BuiltinFunc, error) {
	decl, known := ast.BuiltinMap[name]
	if !known {
		return nil, nil, fmt.Errorf("%w: unknown builtin %s", ErrUnsupported, name)
	}
	if decl.Nondeterministic || unsupportedBuiltins[name] || decl.Decl.Result() == nil {
		return nil, nil, fmt.Errorf("%w: builtin %s", ErrUnsupported, name)
	}
	f := topdown.GetBuiltin(name)
	if f == nil {
		return nil, nil, fmt.Errorf("%w: builtin %s has no implementation", ErrUnsupported, name)
	}
	return decl, f, nil
}

func (c *compiler) stmt(s ir.Stmt) (stmt, error) {
	switch s := s.(type) {
	case *ir.ReturnLocalStmt:
		return &returnStmt{src: c.local(s.Source)}, nil
	case *ir.CallStmt:
		args := c.operands(s.Args)
		if id, ok := c.funcIDs[s.Func]; ok {
			if len(args) != len(c.policy.Funcs.Funcs[id].Params) {
				return nil, fmt.Errorf("planeval: call of %s with %d arguments, want %d",
					s.Func, len(args), len(c.policy.Funcs.Funcs[id].Params))
			}
			return &callStmt{fn: id, args: args, result: c.local(s.Result)}, nil
		}
		decl, f, err := builtin(s.Func)
		if err != nil {
			return nil, err
		}
		return &builtinStmt{name: s.Func, f: f, relation: decl.Relation, args: args, result: c.local(s.Result)}, nil
	case *ir.CallDynamicStmt:
		return nil, fmt.Errorf("%w: dynamic call", ErrUnsupported)
	case *ir.WithStmt:
		return nil, fmt.Errorf("%w: with", ErrUnsupported)
	case *ir.BlockStmt:
		bs, err := c.blocks(s.Blocks)
		if err != nil {
			return nil, err
		}
		return &blockStmt{blocks: bs}, nil
	case *ir.BreakStmt:
		return &breakStmt{levels: int(s.Index) + 1}, nil
	case *ir.DotStmt:
		src := c.operand(s.Source)
		key := c.operand(s.Key)
		if src.local == int(ir.Data) && key.term != nil && key.term.Equal(ast.InternedTerm("system")) {
			// data.system holds what OPA's store adds (bundle manifests),
			// which the base data given to Compile lacks.
			return nil, fmt.Errorf("%w: reads data.system", ErrUnsupported)
		}
		return &dotStmt{src: src, key: key, target: c.local(s.Target)}, nil
	case *ir.LenStmt:
		src := c.operand(s.Source)
		return &lenStmt{src: src, target: c.local(s.Target)}, nil
	case *ir.ScanStmt:
		body, err := c.block(s.Block)
		if err != nil {
			return nil, err
		}
		return &scanStmt{src: c.local(s.Source), key: c.local(s.Key), value: c.local(s.Value), body: body}, nil
	case *ir.NotStmt:
		body, err := c.block(s.Block)
		if err != nil {
			return nil, err
		}
		return &notStmt{body: body}, nil
	case *ir.AssignIntStmt:
		return &assignStmt{src: operand{local: -1, term: ast.InternedTerm(int(s.Value))}, target: c.local(s.Target)}, nil
	case *ir.AssignVarStmt:
		src := c.operand(s.Source)
		return &assignStmt{src: src, target: c.local(s.Target)}, nil
	case *ir.AssignVarOnceStmt:
		src := c.operand(s.Source)
		return &assignOnceStmt{src: src, target: c.local(s.Target), loc: c.location(s.Location)}, nil
	case *ir.ResetLocalStmt:
		return &resetStmt{target: c.local(s.Target)}, nil
	case *ir.MakeNullStmt:
		return &assignStmt{src: operand{local: -1, term: ast.InternedNullTerm}, target: c.local(s.Target)}, nil
	case *ir.MakeNumberIntStmt:
		return &assignStmt{src: operand{local: -1, term: ast.InternedTerm(int(s.Value))}, target: c.local(s.Target)}, nil
	case *ir.MakeNumberRefStmt:
		if s.Index < 0 || s.Index >= len(c.policy.Static.Strings) {
			return nil, fmt.Errorf("planeval: number index %d out of range", s.Index)
		}
		n, err := ast.NumberChecked(c.policy.Static.Strings[s.Index].Value)
		if err != nil {
			return nil, fmt.Errorf("planeval: number constant: %w", err)
		}
		return &assignStmt{src: operand{local: -1, term: ast.NewTerm(n)}, target: c.local(s.Target)}, nil
	case *ir.MakeArrayStmt:
		return &makeStmt{kind: makeArray, capacity: int(s.Capacity), target: c.local(s.Target)}, nil
	case *ir.MakeObjectStmt:
		return &makeStmt{kind: makeObject, target: c.local(s.Target)}, nil
	case *ir.MakeSetStmt:
		return &makeStmt{kind: makeSet, target: c.local(s.Target)}, nil
	case *ir.EqualStmt:
		a, b := c.operand(s.A), c.operand(s.B)
		return &equalStmt{a: a, b: b}, nil
	case *ir.NotEqualStmt:
		a, b := c.operand(s.A), c.operand(s.B)
		return &equalStmt{a: a, b: b, negate: true}, nil
	case *ir.IsArrayStmt:
		src := c.operand(s.Source)
		return &isStmt{src: src, kind: makeArray}, nil
	case *ir.IsObjectStmt:
		src := c.operand(s.Source)
		return &isStmt{src: src, kind: makeObject}, nil
	case *ir.IsSetStmt:
		src := c.operand(s.Source)
		return &isStmt{src: src, kind: makeSet}, nil
	case *ir.IsDefinedStmt:
		return &definedStmt{src: c.local(s.Source), want: true}, nil
	case *ir.IsUndefinedStmt:
		return &definedStmt{src: c.local(s.Source)}, nil
	case *ir.ArrayAppendStmt:
		v := c.operand(s.Value)
		return &arrayAppendStmt{value: v, array: c.local(s.Array)}, nil
	case *ir.ObjectInsertStmt:
		k, v := c.operand(s.Key), c.operand(s.Value)
		return &objectInsertStmt{key: k, value: v, object: c.local(s.Object)}, nil
	case *ir.ObjectInsertOnceStmt:
		k, v := c.operand(s.Key), c.operand(s.Value)
		return &objectInsertStmt{key: k, value: v, object: c.local(s.Object), once: true, loc: c.location(s.Location)}, nil
	case *ir.ObjectMergeStmt:
		return &objectMergeStmt{a: c.local(s.A), b: c.local(s.B), target: c.local(s.Target), loc: c.location(s.Location)}, nil
	case *ir.SetAddStmt:
		v := c.operand(s.Value)
		return &setAddStmt{value: v, set: c.local(s.Set)}, nil
	case *ir.NopStmt:
		return &nopStmt{}, nil
	case *ir.ResultSetAddStmt:
		return &resultStmt{src: c.local(s.Value)}, nil
	default:
		return nil, fmt.Errorf("%w: statement %T", ErrUnsupported, s)
	}
}

// location renders a statement's place in its module, for conflict
// errors.
func (c *compiler) location(l ir.Location) string {
	file := "policy"
	if l.File >= 0 && l.File < len(c.policy.Static.Files) {
		file = c.policy.Static.Files[l.File].Value
	}
	return fmt.Sprintf("%s:%d", file, l.Row)
}
