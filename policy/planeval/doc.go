// Package planeval evaluates OPA's compiled query plans, faster than OPA's
// topdown.
//
// It evaluates OPA query plans: the intermediate representation (package ir)
// that OPA's planner makes of a Rego query, the same form `opa build -t
// plan` writes and OPA's Wasm compiler reads.
//
// Rego's own evaluator (topdown) unifies terms, keeps binding lists and
// backtracks, which costs tens of microseconds and hundreds of
// allocations for an authorization decision. A plan has already resolved
// all of that into straight-line statements over local variables, so
// running it is a loop over statements with a few allocations for the
// values it builds. Values are OPA's own (ast.Term) and builtins are
// OPA's own implementations (topdown.GetBuiltin), so a plan computes what
// topdown computes; the policy engine still checks that on every bundle
// before it trusts a plan.
//
// Compile refuses what it cannot run exactly: `with` (WithStmt), dynamic
// calls (CallDynamicStmt), reads of data.system, and builtins that are
// nondeterministic or need the evaluator's runtime (http.send,
// time.now_ns, print, io.jwt.decode_verify, ...). Callers evaluate such
// policies with topdown.
//
// planeval imports OPA only; it must not import other floe packages.
package planeval
