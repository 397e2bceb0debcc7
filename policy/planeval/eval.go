package planeval

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// Control flow follows OPA's Wasm compiler, the reference for what a plan
// means: every block is a level that a failing statement leaves (break 0)
// and a BreakStmt leaves Index+1 of. A statement's exec returns how many
// enclosing blocks to leave, counting its own as 1: 0 goes on, and
// returned unwinds everything up to the function.
const returned = 1 << 30

// A block's run returns completed when it ran to its end, or how many
// levels above itself are still to leave (0: none, the enclosing block
// goes on after it).
const completed = -1

type stmt interface {
	exec(s *state, locals []*ast.Term) (int, error)
}

// operand is a local (local >= 0) or a constant term.
type operand struct {
	local int
	term  *ast.Term
}

// get returns the operand's value, nil when it is an undefined local (in
// plans, only input can be). Statements needing a value treat nil as
// undefined, as the Wasm runtime's null pointer is.
func (o operand) get(locals []*ast.Term) *ast.Term {
	if o.local < 0 {
		return o.term
	}
	return locals[o.local]
}

// run executes one block.
func (s *state) run(block []stmt, locals []*ast.Term) (int, error) {
	for _, st := range block {
		k, err := st.exec(s, locals)
		if err != nil {
			return 0, err
		}
		if k != 0 {
			if k == returned {
				return returned, nil
			}
			return k - 1, nil
		}
	}
	return completed, nil
}

// Eval runs the program with input (nil: input is undefined) and returns
// the values the plan added to its result set, in the order added. For a
// plan of query data.x.y that is one object {"result": value} when the
// rule is defined and none otherwise. Conflicts (a complete rule with two
// values) and builtin halts are errors, as in topdown; other builtin
// errors make the call undefined, as in topdown's default mode.
func (p *Program) Eval(ctx context.Context, input ast.Value) (results []*ast.Term, err error) {
	s := p.pool.get()
	defer p.pool.put(s)
	s.start(ctx)
	locals := s.locals[len(p.funcs)]
	if input != nil {
		locals[0] = ast.NewTerm(input)
	}
	locals[1] = p.data
	defer func() {
		// A plan this package mishandles must not take the server down;
		// the caller treats the error as an evaluation fault.
		if r := recover(); r != nil {
			results, err = nil, fmt.Errorf("planeval: internal error: %v", r)
		}
	}()
	for _, b := range p.blocks {
		r, err := s.run(b, locals)
		if err != nil {
			return nil, err
		}
		if r == returned {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(s.results) == 0 {
		return nil, nil
	}
	return append([]*ast.Term(nil), s.results...), nil
}

// call runs function id with args and returns its value, nil when
// undefined.
func (s *state) call(id int, args []*ast.Term) (*ast.Term, error) {
	fn := s.p.funcs[id]
	if fn.memoize {
		if s.memoDone[id] {
			return s.memo[id], nil
		}
	}
	if err := s.tick(); err != nil {
		return nil, err
	}
	// Rego forbids recursion, so a function has at most one frame live:
	// each function owns one locals slice per state.
	locals := s.locals[id]
	clear(locals)
	for i, l := range fn.params {
		locals[l] = args[i]
	}
	v := (*ast.Term)(nil)
	for _, b := range fn.blocks {
		r, err := s.run(b, locals)
		if err != nil {
			return nil, err
		}
		if r == returned {
			v, s.ret = s.ret, nil
			break
		}
		if r > 0 {
			v = locals[fn.ret]
			break
		}
		v = locals[fn.ret]
	}
	if fn.memoize {
		s.memo[id], s.memoDone[id] = v, true
	}
	return v, nil
}

// tick checks for cancellation every so many calls and scan steps.
func (s *state) tick() error {
	s.steps++
	if s.steps&255 == 0 {
		return s.ctx.Err()
	}
	return nil
}

type returnStmt struct{ src int }

func (st *returnStmt) exec(s *state, locals []*ast.Term) (int, error) {
	s.ret = locals[st.src]
	return returned, nil
}

type callStmt struct {
	fn     int
	args   []operand
	result int
}

func (st *callStmt) exec(s *state, locals []*ast.Term) (int, error) {
	// Arguments go to a fresh slice: the callee may call others before it
	// has read them all.
	var buf [4]*ast.Term
	args := buf[:0]
	if len(st.args) > len(buf) {
		args = make([]*ast.Term, 0, len(st.args))
	}
	for _, a := range st.args {
		args = append(args, a.get(locals))
	}
	v, err := s.call(st.fn, args)
	if err != nil {
		return 0, err
	}
	if v == nil {
		return 1, nil
	}
	locals[st.result] = v
	return 0, nil
}

type builtinStmt struct {
	name string
	f    topdown.BuiltinFunc
	// relation builtins (walk) yield many values, which the plan scans:
	// they are collected into an array, as the Wasm runtime returns them.
	relation bool
	args     []operand
	result   int
}

func (st *builtinStmt) exec(s *state, locals []*ast.Term) (int, error) {
	args := s.args[:0]
	for _, a := range st.args {
		t := a.get(locals)
		if t == nil {
			clear(args)
			return 1, nil
		}
		args = append(args, t)
	}
	s.args = args
	s.out = nil
	var err error
	if st.relation {
		s.outs = s.outs[:0]
		if err = st.f(s.bctx, args, s.iterAll); err == nil {
			s.out = ast.ArrayTerm(slices.Clone(s.outs)...)
		}
		clear(s.outs)
	} else {
		err = st.f(s.bctx, args, s.iter)
	}
	out := s.out
	s.out = nil
	clear(args)
	if err != nil {
		var halt topdown.Halt
		if errors.As(err, &halt) {
			return 0, fmt.Errorf("%s: %w", st.name, err)
		}
		// topdown's default (non-strict) mode: a builtin error makes the
		// expression undefined.
		return 1, nil
	}
	if out == nil {
		return 1, nil
	}
	locals[st.result] = out
	return 0, nil
}

type blockStmt struct{ blocks [][]stmt }

func (st *blockStmt) exec(s *state, locals []*ast.Term) (int, error) {
	for _, b := range st.blocks {
		r, err := s.run(b, locals)
		if err != nil {
			return 0, err
		}
		if r > 0 {
			return r, nil
		}
	}
	return 0, nil
}

type breakStmt struct{ levels int }

func (st *breakStmt) exec(*state, []*ast.Term) (int, error) { return st.levels, nil }

type dotStmt struct {
	src, key operand
	target   int
	// inData marks a lookup in a reference into the base data document
	// (data.x.y[2], not a variable bound to it): topdown looks base
	// documents up by path, where a number selects the key spelled as it.
	inData bool
}

func (st *dotStmt) exec(_ *state, locals []*ast.Term) (int, error) {
	src, key := st.src.get(locals), st.key.get(locals)
	if src == nil || key == nil {
		return 1, nil
	}
	var v *ast.Term
	switch c := src.Value.(type) {
	case ast.Object:
		v = c.Get(key)
		if v == nil && st.inData {
			if n, ok := key.Value.(ast.Number); ok {
				v = c.Get(ast.StringTerm(string(n)))
			}
		}
	case *ast.Array:
		if n, ok := key.Value.(ast.Number); ok {
			if i, ok := n.Int(); ok && i >= 0 && i < c.Len() {
				v = c.Elem(i)
			}
		}
	case ast.Set:
		if c.Contains(key) {
			v = key
		}
	}
	if v == nil {
		return 1, nil
	}
	locals[st.target] = v
	return 0, nil
}

type lenStmt struct {
	src    operand
	target int
}

func (st *lenStmt) exec(_ *state, locals []*ast.Term) (int, error) {
	src := st.src.get(locals)
	if src == nil {
		return 1, nil
	}
	var n int
	switch c := src.Value.(type) {
	case ast.Object:
		n = c.Len()
	case *ast.Array:
		n = c.Len()
	case ast.Set:
		n = c.Len()
	case ast.String:
		n = utf8.RuneCountInString(string(c))
	default:
		return 1, nil
	}
	locals[st.target] = ast.InternedTerm(n)
	return 0, nil
}

type scanStmt struct {
	src, key, value int
	body            []stmt
}

// errStopScan ends an iteration early; it never leaves exec.
var errStopScan = errors.New("stop scan")

func (st *scanStmt) exec(s *state, locals []*ast.Term) (int, error) {
	src := locals[st.src]
	if src == nil {
		return 0, nil // nothing to scan, as over a scalar
	}
	// The body is the scan loop's level: leaving it (1) goes to the next
	// element, leaving one more (2) ends the scan, and more leave blocks
	// around the scan.
	k := 0
	step := func(key, value *ast.Term) error {
		if err := s.tick(); err != nil {
			return err
		}
		locals[st.key], locals[st.value] = key, value
		r, err := s.run(st.body, locals)
		switch {
		case err != nil:
			return err
		case r == returned:
			k = returned
			return errStopScan
		case r >= 1:
			k = r - 1
			return errStopScan
		}
		return nil
	}
	var err error
	switch c := src.Value.(type) {
	case *ast.Array:
		for i := range c.Len() {
			if err = step(ast.InternedTerm(i), c.Elem(i)); err != nil {
				break
			}
		}
	case ast.Object:
		err = c.Iter(step)
	case ast.Set:
		err = c.Iter(func(t *ast.Term) error { return step(t, t) })
	}
	if err != nil && err != errStopScan {
		return 0, err
	}
	return k, nil
}

type notStmt struct{ body []stmt }

func (st *notStmt) exec(s *state, locals []*ast.Term) (int, error) {
	r, err := s.run(st.body, locals)
	switch {
	case err != nil:
		return 0, err
	case r == completed:
		return 1, nil // the negated block held, so the not fails
	default:
		return r, nil // 0: the block failed and the not holds
	}
}

type assignStmt struct {
	src    operand
	target int
}

func (st *assignStmt) exec(_ *state, locals []*ast.Term) (int, error) {
	locals[st.target] = st.src.get(locals)
	return 0, nil
}

type assignOnceStmt struct {
	src    operand
	target int
	loc    string
}

func (st *assignOnceStmt) exec(_ *state, locals []*ast.Term) (int, error) {
	t := st.src.get(locals)
	if t == nil {
		return 0, nil
	}
	if old := locals[st.target]; old != nil {
		if !ast.ValueEqual(old.Value, t.Value) {
			return 0, conflict(st.loc, "complete rules must not produce multiple outputs")
		}
		return 0, nil
	}
	locals[st.target] = t
	return 0, nil
}

func conflict(loc, msg string) error {
	return &topdown.Error{Code: topdown.ConflictErr, Message: fmt.Sprintf("%s: %s", loc, msg)}
}

type resetStmt struct{ target int }

func (st *resetStmt) exec(_ *state, locals []*ast.Term) (int, error) {
	locals[st.target] = nil
	return 0, nil
}

type collection int

const (
	makeArray collection = iota
	makeObject
	makeSet
)

type makeStmt struct {
	kind     collection
	capacity int
	target   int
}

func (st *makeStmt) exec(_ *state, locals []*ast.Term) (int, error) {
	switch st.kind {
	case makeArray:
		locals[st.target] = ast.NewTerm(ast.NewArrayWithCapacity(st.capacity))
	case makeObject:
		locals[st.target] = ast.NewTerm(ast.NewObject())
	case makeSet:
		locals[st.target] = ast.NewTerm(ast.NewSet())
	}
	return 0, nil
}

type equalStmt struct {
	a, b   operand
	negate bool
}

func (st *equalStmt) exec(_ *state, locals []*ast.Term) (int, error) {
	a, b := st.a.get(locals), st.b.get(locals)
	if a == nil || b == nil {
		return 1, nil
	}
	if ast.ValueEqual(a.Value, b.Value) == st.negate {
		return 1, nil
	}
	return 0, nil
}

type isStmt struct {
	src  operand
	kind collection
}

func (st *isStmt) exec(_ *state, locals []*ast.Term) (int, error) {
	t := st.src.get(locals)
	if t == nil {
		return 1, nil
	}
	var ok bool
	switch st.kind {
	case makeArray:
		_, ok = t.Value.(*ast.Array)
	case makeObject:
		_, ok = t.Value.(ast.Object)
	case makeSet:
		_, ok = t.Value.(ast.Set)
	}
	if !ok {
		return 1, nil
	}
	return 0, nil
}

type definedStmt struct {
	src  int
	want bool
}

func (st *definedStmt) exec(_ *state, locals []*ast.Term) (int, error) {
	if (locals[st.src] != nil) != st.want {
		return 1, nil
	}
	return 0, nil
}

type arrayAppendStmt struct {
	value operand
	array int
}

func (st *arrayAppendStmt) exec(_ *state, locals []*ast.Term) (int, error) {
	v := st.value.get(locals)
	if v == nil {
		return 1, nil
	}
	t := locals[st.array]
	arr, ok := valueOf[*ast.Array](t)
	if !ok {
		return 0, fmt.Errorf("planeval: append to a non-array local %d", st.array)
	}
	// In place, as the Wasm runtime does: the planner appends only to
	// arrays it made, and other locals naming the array see the element.
	t.Value = arr.Append(v)
	return 0, nil
}

type objectInsertStmt struct {
	key, value operand
	object     int
	once       bool
	loc        string
}

func (st *objectInsertStmt) exec(_ *state, locals []*ast.Term) (int, error) {
	k, v := st.key.get(locals), st.value.get(locals)
	if k == nil || v == nil {
		return 1, nil
	}
	obj, ok := valueOf[ast.Object](locals[st.object])
	if !ok {
		return 0, fmt.Errorf("planeval: insert into a non-object local %d", st.object)
	}
	if st.once {
		if old := obj.Get(k); old != nil {
			if !ast.ValueEqual(old.Value, v.Value) {
				return 0, conflict(st.loc, "object keys must be unique")
			}
			return 0, nil
		}
	}
	obj.Insert(k, v)
	return 0, nil
}

type objectMergeStmt struct {
	a, b, target int
	loc          string
}

func (st *objectMergeStmt) exec(_ *state, locals []*ast.Term) (int, error) {
	a, okA := valueOf[ast.Object](locals[st.a])
	b, okB := valueOf[ast.Object](locals[st.b])
	if !okA || !okB {
		return 0, conflict(st.loc, "merge of a non-object")
	}
	locals[st.target] = ast.NewTerm(mergeBase(a, b))
	return 0, nil
}

// mergeBase merges a virtual document into the base document at the same
// path (the planner's only use of ObjectMergeStmt). Objects merge
// recursively; where both hold another value, the base document's stands,
// as in topdown.
func mergeBase(base, virtual ast.Object) ast.Object {
	merged, _ := base.MergeWith(virtual, func(v1, v2 *ast.Term) (*ast.Term, bool) {
		o1, ok1 := v1.Value.(ast.Object)
		o2, ok2 := v2.Value.(ast.Object)
		if !ok1 || !ok2 {
			return v1, false
		}
		return ast.NewTerm(mergeBase(o1, o2)), false
	})
	return merged
}

type setAddStmt struct {
	value operand
	set   int
}

func (st *setAddStmt) exec(_ *state, locals []*ast.Term) (int, error) {
	v := st.value.get(locals)
	if v == nil {
		return 1, nil
	}
	set, ok := valueOf[ast.Set](locals[st.set])
	if !ok {
		return 0, fmt.Errorf("planeval: add to a non-set local %d", st.set)
	}
	set.Add(v)
	return 0, nil
}

type nopStmt struct{}

func (*nopStmt) exec(*state, []*ast.Term) (int, error) { return 0, nil }

type resultStmt struct{ src int }

func (st *resultStmt) exec(s *state, locals []*ast.Term) (int, error) {
	t := locals[st.src]
	if t == nil {
		return 0, fmt.Errorf("planeval: result of undefined local %d", st.src)
	}
	s.results = append(s.results, t)
	return 0, nil
}

func valueOf[V ast.Value](t *ast.Term) (V, bool) {
	var zero V
	if t == nil {
		return zero, false
	}
	v, ok := t.Value.(V)
	return v, ok
}
