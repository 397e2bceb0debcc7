package planeval_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/policy/planeval"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/util"
)

// The tests compare every plan evaluation with topdown's evaluation of
// the same query on the same bundle: topdown is the reference.

const entrypoint = "t/p"

// testData is the bundle data every case sees as data.cfg.
const testData = `{"cfg": {"groups": {"admins": "admins", "ops": "ops"}, "limits": [1, 2, 3], "deep": {"a": {"b": "c"}}}}`

// testBundle builds a bundle of one module (package t) and testData.
func testBundle(t testing.TB, module string) *bundle.Bundle {
	t.Helper()
	parsed, err := ast.ParseModuleWithOpts("/t/policy.rego", module, ast.ParserOptions{RegoVersion: ast.RegoV1})
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	var data map[string]any
	if err := util.UnmarshalJSON([]byte(testData), &data); err != nil {
		t.Fatal(err)
	}
	return &bundle.Bundle{
		Manifest: bundle.Manifest{Revision: "test", Roots: &[]string{""}},
		Data:     data,
		Modules: []bundle.ModuleFile{{
			URL: "/t/policy.rego", Path: "/t/policy.rego", Raw: []byte(module), Parsed: parsed,
		}},
	}
}

// evaluators holds both evaluators of one bundle.
type evaluators struct {
	topdown rego.PreparedEvalQuery
	plan    *planeval.Program
}

func prepare(t testing.TB, module string) (evaluators, error) {
	t.Helper()
	b := testBundle(t, module)
	pq, err := rego.New(rego.Query("data.t.p"), rego.ParsedBundle("t", b)).PrepareForEval(context.Background())
	if err != nil {
		t.Fatalf("topdown prepare: %v", err)
	}
	policy, err := planeval.PlanBundle(context.Background(), b, entrypoint)
	if err != nil {
		return evaluators{}, err
	}
	data, err := ast.InterfaceToValue(b.Data)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := planeval.Compile(policy, entrypoint, data)
	if err != nil {
		return evaluators{}, err
	}
	return evaluators{topdown: pq, plan: prog}, nil
}

func keepTerm(t *ast.Term, _ *rego.EvalContext) (any, error) { return t, nil }

// outcome is what one evaluator made of one input.
type outcome struct {
	value *ast.Term // nil: undefined
	err   error
}

func (o outcome) String() string {
	switch {
	case o.err != nil:
		return "error: " + o.err.Error()
	case o.value == nil:
		return "undefined"
	default:
		return o.value.String()
	}
}

func (ev evaluators) both(t testing.TB, input string) (td, pl outcome) {
	t.Helper()
	var opts []rego.EvalOption
	var in ast.Value
	if input != "" {
		var x any
		if err := util.UnmarshalJSON([]byte(input), &x); err != nil {
			t.Fatalf("input %s: %v", input, err)
		}
		v, err := ast.InterfaceToValue(x)
		if err != nil {
			t.Fatal(err)
		}
		in = v
		opts = append(opts, rego.EvalParsedInput(v))
	}
	rs, err := ev.topdown.Eval(context.Background(), append(opts, rego.EvalGenerateJSON(keepTerm))...)
	td.err = err
	if err == nil && len(rs) > 0 {
		td.value = rs[0].Expressions[0].Value.(*ast.Term)
	}
	results, err := ev.plan.Eval(context.Background(), in)
	pl.err = err
	if err == nil && len(results) > 0 {
		if len(results) != 1 {
			t.Fatalf("plan gave %d results, want 1", len(results))
		}
		pl.value = results[0].Value.(ast.Object).Get(ast.StringTerm("result"))
	}
	return td, pl
}

func same(a, b outcome) bool {
	if (a.err != nil) != (b.err != nil) {
		return false
	}
	if (a.value == nil) != (b.value == nil) {
		return false
	}
	return a.value == nil || ast.ValueEqual(a.value.Value, b.value.Value)
}

// cases exercise each kind of plan statement. Each lists inputs ("" is an
// undefined input) and, where it matters, what topdown answers, so that a
// case cannot pass by both evaluators failing alike.
var cases = []struct {
	name   string
	module string
	inputs []string
	want   []string // topdown's answer per input, when given
}{{
	name: "else chain with default",
	module: `package t
default p := "none"
p := "admin" if { data.cfg.groups.admins in input.groups } else := "ops" if { data.cfg.groups.ops in input.groups }`,
	inputs: []string{`{"groups": ["admins"]}`, `{"groups": ["ops", "x"]}`, `{"groups": []}`, `{}`, ``},
	want:   []string{`"admin"`, `"ops"`, `"none"`, `"none"`, `"none"`},
}, {
	name: "partial set over array, object and set scans",
	module: `package t
p contains x if { some x in input.xs; x > 1 }
p contains k if { some k, v in input.obj; v == true }
p contains y if { some y in {"s1", "s2"}; input.sets }`,
	inputs: []string{`{"xs": [1, 2, 3], "obj": {"a": true, "b": false}}`, `{"sets": true}`, `{"xs": "not an array"}`, `{}`},
	want:   []string{`{2, 3, "a"}`, `{"s1", "s2"}`, `set()`, `set()`},
}, {
	name: "partial object rule and its conflict",
	module: `package t
p[k] := v if { some k, v in input.a }
p[k] := v if { some k, v in input.b }`,
	inputs: []string{`{"a": {"x": 1}, "b": {"y": 2}}`, `{"a": {"x": 1}, "b": {"x": 1}}`, `{"a": {"x": 1}, "b": {"x": 2}}`},
	want:   []string{`{"x": 1, "y": 2}`, `{"x": 1}`, `error`},
}, {
	name: "complete rule conflict",
	module: `package t
p := 1 if input.a
p := 2 if input.b`,
	inputs: []string{`{"a": true}`, `{"b": true}`, `{"a": true, "b": true}`, `{}`},
	want:   []string{`1`, `2`, `error`, `undefined`},
}, {
	name: "comprehensions",
	module: `package t
p := {"arr": [y | some x in input.xs; x > 0; y := x * 2], "set": {x | some x in input.xs}, "obj": {k: x | some x in input.xs; k := sprintf("k%d", [x])}}`,
	inputs: []string{`{"xs": [-1, 1, 2, 2]}`, `{"xs": []}`, `{}`},
	want:   []string{`{"arr": [2, 4, 4], "set": {-1, 1, 2}, "obj": {"k-1": -1, "k1": 1, "k2": 2}}`, `{"arr": [], "set": set(), "obj": {}}`, `{"arr": [], "set": set(), "obj": {}}`},
}, {
	name: "negation and every",
	module: `package t
p := "blocked" if { not input.allowed } else := "all small" if { every x in input.xs { x < 10 } } else := "big"`,
	inputs: []string{`{"allowed": false}`, `{"allowed": true, "xs": [1, 2]}`, `{"allowed": true, "xs": [1, 20]}`, `{"allowed": true}`},
	want:   []string{`"blocked"`, `"all small"`, `"big"`, `"big"`},
}, {
	name: "functions with arguments, else and undefined",
	module: `package t
owner(name) := parts[1] if { parts := split(name, "/"); parts[0] == "users"; count(parts) > 2 }
kind(x) := "num" if is_number(x) else := "str" if is_string(x)
p := {"owner": owner(input.ref), "kinds": [kind(v) | some v in input.vals]} if input.ref
p := "no owner" if { not owner(input.other) ; input.other }`,
	inputs: []string{`{"ref": "users/alice/x", "vals": [1, "a", true]}`, `{"ref": "main"}`, `{"other": "main"}`},
	want:   []string{`{"owner": "alice", "kinds": ["num", "str"]}`, `undefined`, `"no owner"`},
}, {
	name: "numbers",
	module: `package t
p := {"sum": input.a + input.b, "frac": 1.5 * input.a, "big": 12345678901234567890, "eq": input.a == 1.0, "lt": input.a < input.b, "div": input.a / 4}`,
	inputs: []string{`{"a": 1, "b": 2.5}`, `{"a": 2, "b": 2}`},
}, {
	name: "builtin errors are undefined",
	module: `package t
default p := "fallback"
p := to_number(input.s)`,
	inputs: []string{`{"s": "12"}`, `{"s": "twelve"}`, `{}`},
	want:   []string{`12`, `"fallback"`, `"fallback"`},
}, {
	name: "division by zero is undefined",
	module: `package t
p := {"q": q} if { q := 1 / input.d }`,
	inputs: []string{`{"d": 0}`, `{"d": 2}`},
	want:   []string{`undefined`, `{"q": 0.5}`},
}, {
	name: "nested refs, array indexes and set membership",
	module: `package t
admins := {"root", "ops"}
p := [input.a.b[1].c, data.cfg.limits[2], data.cfg.deep.a.b, admins[input.who]]`,
	inputs: []string{`{"a": {"b": [{"c": 0}, {"c": "x"}]}, "who": "root"}`, `{"a": {"b": [{"c": 0}]}, "who": "root"}`, `{"a": {"b": [{"c": 0}, {"c": 1}]}, "who": "bob"}`},
	want:   []string{`["x", 3, "c", "root"]`, `undefined`, `undefined`},
}, {
	name: "string builtins",
	module: `package t
p := {
	"concat": concat(",", sort(input.xs)),
	"upper": upper(input.s), "trim": trim_space(input.s),
	"re": regex.match("^[a-z]+/", input.s), "glob": glob.match("users/*/x", ["/"], input.s),
	"get": object.get(input, "missing", "dflt"), "json": json.marshal(input.xs),
	"starts": startswith(input.s, "us"), "idx": indexof(input.s, "/"), "fmt": sprintf("%v-%d", [input.s, count(input.xs)]),
}`,
	inputs: []string{`{"xs": ["b", "a"], "s": "users/al/x"}`, `{"xs": [], "s": " X "}`},
}, {
	name: "relation builtin",
	module: `package t
p := [path | walk(input, [path, v]); is_number(v); v > 1]
leaves contains v if { walk(input, [_, v]); is_string(v) }
p2 := leaves`,
	inputs: []string{`{"a": [1, 2, {"b": 3}], "c": "s"}`, `[]`, `5`},
	want:   []string{`[["a", 1], ["a", 2, "b"]]`, `[]`, `[[]]`},
}, {
	name: "multi-level rule refs merge objects",
	module: `package t
p.a.b := 1 if input.x
p.a.c := 2
p.d := input.d`,
	inputs: []string{`{"x": true, "d": [1]}`, `{}`},
	want:   []string{`{"a": {"b": 1, "c": 2}, "d": [1]}`, `{"a": {"c": 2}}`},
}, {
	name: "whole input and undefined input",
	module: `package t
p := input`,
	inputs: []string{`{"a": [1, {"b": null}]}`, `"just a string"`, ``},
	want:   []string{`{"a": [1, {"b": null}]}`, `"just a string"`, `undefined`},
}, {
	name: "rules of another package",
	module: `package t
import data.t.helpers
p := helpers.level
helpers.level := "high" if input.n > 5
helpers.level := "low" if input.n <= 5`,
	inputs: []string{`{"n": 7}`, `{"n": 1}`, `{}`},
	want:   []string{`"high"`, `"low"`, `undefined`},
}}

func TestPlanMatchesTopdown(t *testing.T) {
	t.Parallel()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := prepare(t, tc.module)
			if err != nil {
				t.Fatalf("plan: %v", err)
			}
			for i, input := range tc.inputs {
				td, pl := ev.both(t, input)
				if !same(td, pl) {
					t.Errorf("input %s: topdown %v, plan %v", input, td, pl)
				}
				if tc.want == nil {
					continue
				}
				switch want := tc.want[i]; want {
				case "error":
					if td.err == nil {
						t.Errorf("input %s: topdown %v, want an error", input, td)
					}
				case "undefined":
					if td.err != nil || td.value != nil {
						t.Errorf("input %s: topdown %v, want undefined", input, td)
					}
				default:
					if td.value == nil || !ast.ValueEqual(td.value.Value, ast.MustParseTerm(want).Value) {
						t.Errorf("input %s: topdown %v, want %s", input, td, want)
					}
				}
			}
		})
	}
}

func TestUnsupported(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, module, why string }{
		{"with", `package t
q := input.x
p := x if { x := q with input.x as 1 }`, "with"},
		{"clock", `package t
p := time.now_ns()`, "time.now_ns"},
		{"network", `package t
p := http.send({"method": "GET", "url": "http://127.0.0.1:1"})`, "http.send"},
		{"data.system", `package t
p := data.system.bundles`, "data.system"},
		{"dynamic data ref", `package t
rules.a := 1
rules.b := 2
p := data.t.rules[input.name]`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := prepare(t, tc.module)
			if err == nil {
				t.Fatal("plan compiled; want it refused")
			}
			if tc.why != "" && !strings.Contains(err.Error(), tc.why) {
				t.Errorf("error %q does not name %q", err, tc.why)
			}
			// Refusals from Compile say so with ErrUnsupported; the
			// planner's own refusals are plain errors.
			if strings.Contains(err.Error(), "planeval") && !errors.Is(err, planeval.ErrUnsupported) {
				t.Errorf("error %v is not ErrUnsupported", err)
			}
		})
	}
}

func TestCancelled(t *testing.T) {
	t.Parallel()
	ev, err := prepare(t, `package t
p := count([x | some x in numbers.range(1, 100000); x % 7 == 0])`)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ev.plan.Eval(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Eval with a cancelled context: %v, want context.Canceled", err)
	}
	rs, err := ev.plan.Eval(context.Background(), nil)
	if err != nil || len(rs) != 1 {
		t.Fatalf("Eval: %v %v", rs, err)
	}
	if got := rs[0].Value.(ast.Object).Get(ast.StringTerm("result")); got.String() != "14285" {
		t.Fatalf("result %v, want 14285", got)
	}
}

// TestConcurrentEval runs one program from many goroutines; with -race
// it checks that pooled state is never shared.
func TestConcurrentEval(t *testing.T) {
	t.Parallel()
	ev, err := prepare(t, cases[4].module)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for g := range 8 {
		go func() {
			for i := range 200 {
				input := ast.MustParseTerm(`{"xs": [1, 2, 3]}`).Value
				if (g+i)%2 == 0 {
					input = ast.MustParseTerm(`{"xs": [5]}`).Value
				}
				rs, err := ev.plan.Eval(context.Background(), input)
				if err != nil {
					done <- err
					return
				}
				want := `{"arr": [2, 4, 6], "obj": {"k1": 1, "k2": 2, "k3": 3}, "set": {1, 2, 3}}`
				if (g+i)%2 == 0 {
					want = `{"arr": [10], "obj": {"k5": 5}, "set": {5}}`
				}
				if got := rs[0].Value.(ast.Object).Get(ast.StringTerm("result")); !ast.ValueEqual(got.Value, ast.MustParseTerm(want).Value) {
					done <- errors.New("goroutine got " + got.String() + ", want " + want)
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// FuzzPlanMatchesTopdown evaluates every case's module on arbitrary JSON
// inputs with both evaluators.
func FuzzPlanMatchesTopdown(f *testing.F) {
	var evs []evaluators
	for _, tc := range cases {
		ev, err := prepare(f, tc.module)
		if err != nil {
			f.Fatalf("%s: %v", tc.name, err)
		}
		evs = append(evs, ev)
		for _, in := range tc.inputs {
			f.Add(in)
		}
	}
	f.Fuzz(func(t *testing.T, input string) {
		var x any
		if input == "" || util.UnmarshalJSON([]byte(input), &x) != nil {
			return
		}
		for i, ev := range evs {
			td, pl := ev.both(t, input)
			if !same(td, pl) {
				t.Fatalf("%s, input %s: topdown %v, plan %v", cases[i].name, input, td, pl)
			}
		}
	})
}
