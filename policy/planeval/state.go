package planeval

import (
	"context"
	"sync"

	"github.com/open-policy-agent/opa/v1/ast"
	opametrics "github.com/open-policy-agent/opa/v1/metrics"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/topdown/builtins"
)

// state is one evaluation's scratch space, recycled through the
// program's pool so that a decision allocates only the values it builds.
type state struct {
	p        *Program
	ctx      context.Context
	locals   [][]*ast.Term // per function; the last is the plan's
	memo     []*ast.Term
	memoDone []bool
	results  []*ast.Term
	ret      *ast.Term // the value of the last ReturnLocalStmt
	args     []*ast.Term
	out      *ast.Term             // a builtin's first value
	iter     func(*ast.Term) error // receives builtin values into out
	outs     []*ast.Term           // a relation builtin's values
	iterAll  func(*ast.Term) error // receives them
	bctx     topdown.BuiltinContext
	steps    int
}

type statePool struct{ pool sync.Pool }

func (sp *statePool) init(p *Program) {
	sp.pool.New = func() any {
		s := &state{
			p:        p,
			locals:   make([][]*ast.Term, len(p.funcs)+1),
			memo:     make([]*ast.Term, len(p.funcs)),
			memoDone: make([]bool, len(p.funcs)),
			args:     make([]*ast.Term, 0, 8),
			// Builtins that reach past their operands find what they
			// need here; the ones needing more (clock, network, tracing)
			// are refused at Compile.
			bctx: topdown.BuiltinContext{Metrics: noopMetrics, Cache: builtins.Cache{}},
		}
		for i, f := range p.funcs {
			s.locals[i] = make([]*ast.Term, f.nlocal)
		}
		s.locals[len(p.funcs)] = make([]*ast.Term, p.nlocal)
		// Made once per state: a closure per builtin call would be an
		// allocation per call.
		s.iter = func(t *ast.Term) error {
			if s.out == nil {
				s.out = t
			}
			return nil
		}
		s.iterAll = func(t *ast.Term) error {
			s.outs = append(s.outs, t)
			return nil
		}
		return s
	}
}

func (sp *statePool) get() *state { return sp.pool.Get().(*state) }

// put drops every reference the evaluation made, so pooled states keep no
// inputs or results alive.
func (sp *statePool) put(s *state) {
	for _, l := range s.locals {
		clear(l)
	}
	clear(s.memo)
	clear(s.memoDone)
	clear(s.results)
	s.results = s.results[:0]
	s.ret = nil
	s.ctx = nil
	s.bctx.Context = nil
	clear(s.bctx.Cache)
	sp.pool.Put(s)
}

var noopMetrics = opametrics.NoOp()

func (s *state) start(ctx context.Context) {
	s.ctx = ctx
	s.steps = 0
	s.bctx.Context = ctx
}
