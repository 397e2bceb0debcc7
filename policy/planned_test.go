package policy

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/prometheus/client_golang/prometheus"
)

// defaultBundleWithData is the default bundle with its config replaced.
func defaultBundleWithData(t testing.TB, config string) *bundle.Bundle {
	t.Helper()
	b, err := DefaultBundle()
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal([]byte(config), &c); err != nil {
		t.Fatal(err)
	}
	// Over the shipped config, so the keys a test leaves out keep their
	// shipped values: a bundle missing a document it reads is refused.
	floe := b.Data["floe"].(map[string]any)
	floe["config"] = overlay(floe["config"].(map[string]any), c)
	return b
}

// overlay returns base with every key of over set, objects merged key by
// key.
func overlay(base, over map[string]any) map[string]any {
	out := maps.Clone(base)
	for k, v := range over {
		if vm, ok := v.(map[string]any); ok {
			if bm, ok := out[k].(map[string]any); ok {
				out[k] = overlay(bm, vm)
				continue
			}
		}
		out[k] = v
	}
	return out
}

// allInputs is every combination of a wider set of principals, actions,
// refs, targets and contents than verificationInputs: 7 x 18 x 9 x 4
// inputs, merges and transplants once per target.
func allInputs() []Input {
	principals := []Principal{
		{ID: "alice"},
		{ID: "bob", Groups: []string{"analysts", "finance"}},
		{ID: "pat", Groups: []string{"publishers"}},
		{ID: "ivy", Groups: []string{"ingest", "pipelines"}},
		{ID: "root", Groups: []string{"admins", "ops"}},
		{ID: "rm", Groups: []string{"release-managers", "finance"}},
		{ID: "", Anonymous: true},
	}
	refs := []Ref{
		{Name: "main", Type: RefBranch}, {Name: "users/alice/x", Type: RefBranch},
		{Name: "users/bob", Type: RefBranch}, {Name: "users/alice", Type: RefBranch},
		{Name: "ingest/a", Type: RefBranch}, {Name: "ingest", Type: RefBranch},
		{Name: "v1", Type: RefTag}, {Name: "main", Type: RefTag}, {Name: "", Type: RefDetached},
	}
	contents := [][]Content{
		nil,
		{{Key: []string{"sales", "orders"}, Type: TypeTable, Change: ChangeCreate}},
		{{Key: []string{"finance"}, Type: TypeNamespace, Change: ChangeUpdate}},
		{{Key: []string{"sales", "orders"}, Change: ChangeDelete}, {Key: []string{"finance", "q", "ledger"}, Type: TypeTable, Change: ChangeUpdate,
			Iceberg: &IcebergChange{Operations: []string{"overwrite", "schema-change"}, Updates: []string{"add-schema"}, Branches: []string{"main"}}}},
	}
	var out []Input
	for _, p := range principals {
		for _, a := range verificationActions {
			for _, r := range refs {
				for _, c := range contents {
					in := Input{Version: InputVersion, Principal: p, Action: a, API: "iceberg", Ref: r, Contents: c}
					if a != ActionMerge && a != ActionTransplant {
						out = append(out, in)
						continue
					}
					for _, target := range refs {
						in.Target = &target
						out = append(out, in)
					}
				}
			}
		}
	}
	return out
}

// TestDefaultBundlePlanMatchesTopdown decides every input of allInputs
// with both evaluators, under the shipped config and a renamed one.
func TestDefaultBundlePlanMatchesTopdown(t *testing.T) {
	if testing.Short() {
		t.Skip("evaluates tens of thousands of decisions")
	}
	for name, config := range map[string]string{
		"shipped": `{"groups": {"publishers": "publishers", "ingest": "ingest", "admins": "admins"}, "namespace_groups": {"finance": "finance"}}`,
		"renamed": `{"groups": {"publishers": "release-managers", "ingest": "pipelines", "admins": "ops"}, "namespace_groups": {"sales": "analysts", "finance": "finance"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			a, err := prepare(t.Context(), defaultBundleWithData(t, config), -1, EvaluatorAuto, false)
			if err != nil {
				t.Fatal(err)
			}
			if a.plan == nil {
				t.Fatalf("default bundle runs on topdown: %s", a.topdownWhy)
			}
			allowed := 0
			for _, in := range allInputs() {
				allow, diff, err := disagreement(t.Context(), a, a.plan, &in)
				if diff != "" || err != nil {
					t.Fatalf("%+v: %s %v", in, diff, err)
				}
				if allow {
					allowed++
				}
			}
			// Both answers must vary, or agreeing would prove little.
			if total := len(allInputs()); allowed == 0 || allowed == total {
				t.Fatalf("%d of %d inputs allowed", allowed, total)
			}
		})
	}
}

// FuzzPlanMatchesTopdown decides inputs made of arbitrary strings with
// both evaluators; they must agree on every one.
func FuzzPlanMatchesTopdown(f *testing.F) {
	f.Add("alice", "publishers,finance", "merge", "users/alice/x", "branch", "main", "finance.ledger", false, 1)
	f.Add("", "", "read", "main", "tag", "", "", true, 1)
	f.Add("bob", "admins", "ref.delete", "v1", "tag", "", "sales.orders", false, 2)
	f.Add("x", "ingest", "table.write", "ingest/x/y", "branch", "", "a.b.c", false, 1)
	a, err := prepare(f.Context(), defaultBundleWithData(f, `{"groups": {"publishers": "publishers", "ingest": "ingest", "admins": "admins"}, "namespace_groups": {"finance": "finance"}}`), -1, EvaluatorAuto, false)
	if err != nil {
		f.Fatal(err)
	}
	if a.plan == nil {
		f.Fatalf("default bundle runs on topdown: %s", a.topdownWhy)
	}
	f.Fuzz(func(t *testing.T, id, groups, action, ref, refType, target, key string, anonymous bool, version int) {
		in := Input{
			Version:   version,
			Principal: Principal{ID: id, Anonymous: anonymous},
			Action:    Action(action),
			API:       "iceberg",
			Ref:       Ref{Name: ref, Type: refType},
		}
		if groups != "" {
			in.Principal.Groups = strings.Split(groups, ",")
		}
		if target != "" {
			in.Target = &Ref{Name: target, Type: RefBranch}
		}
		if key != "" {
			in.Contents = []Content{{Key: strings.Split(key, "."), Change: ChangeUpdate}}
		}
		if _, diff, _ := disagreement(t.Context(), a, a.plan, &in); diff != "" {
			t.Fatalf("%+v: %s", in, diff)
		}
	})
}

// TestEvaluatorChoice covers when a bundle runs on topdown and how an
// operator sees it: the log line and the bundle info metric.
func TestEvaluatorChoice(t *testing.T) {
	for _, tc := range []struct {
		name, policy, evaluator string
		want, reason            string
	}{
		{"plannable", `decision := {"allow": input.action == "read", "reasons": ["r"]}`, "", evaluatorPlan, ""},
		{"configured", `decision := {"allow": input.action == "read", "reasons": ["r"]}`, EvaluatorTopdown, evaluatorTopdown, ""},
		{"clock", `decision := {"allow": time.now_ns() > 0, "reasons": ["r"]}`, "", evaluatorTopdown, "time.now_ns"},
		{"with", `read := input.action == "read"
decision := {"allow": x, "reasons": ["r"]} if { x := read with input.action as "read" }`, "", evaluatorTopdown, "with"},
		{"bundle metadata", `decision := {"allow": count(data.system.bundles) > 0, "reasons": ["r"]}`, "", evaluatorTopdown, "data.system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeBundleDir(t, dir, "r1", "package floe.authz\n\n"+tc.policy+"\n")
			var logs bytes.Buffer
			reg := prometheus.NewRegistry()
			e := newTestEngine(t, Options{
				Bundle: dir, Evaluator: tc.evaluator, DecisionCacheSize: -1, Metrics: reg,
				Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			})
			if got := e.active.Load().evaluator(); got != tc.want {
				t.Fatalf("evaluator %q, want %q (%s)", got, tc.want, e.active.Load().topdownWhy)
			}
			if got := metricValue(t, reg, "floe_policy_bundle_info", map[string]string{"revision": "r1", "evaluator": tc.want}); got != 1 {
				t.Errorf("floe_policy_bundle_info{evaluator=%q} = %v, want 1", tc.want, got)
			}
			if tc.reason != "" && !strings.Contains(logs.String(), tc.reason) {
				t.Errorf("log does not say why the bundle runs on topdown (%q):\n%s", tc.reason, logs.String())
			}
			d, err := e.Decide(t.Context(), op(principal("alice"), ActionRead, branchRef("main")))
			if err != nil || !d.Allow {
				t.Fatalf("Decide: %+v, %v", d, err)
			}
		})
	}
}

// TestPlanDisagreementKeepsTopdown checks the verification step itself:
// a plan of another policy than the prepared query must be refused.
func TestPlanDisagreementKeepsTopdown(t *testing.T) {
	a, err := prepare(t.Context(), defaultBundleWithData(t, `{"groups": {"publishers": "publishers", "ingest": "ingest", "admins": "admins"}, "namespace_groups": {}}`), -1, EvaluatorTopdown, false)
	if err != nil {
		t.Fatal(err)
	}
	// The same policy with another config allows different things.
	other := defaultBundleWithData(t, `{"groups": {"publishers": "publishers", "ingest": "ingest", "admins": "nobody"}, "namespace_groups": {}}`)
	prog, why := compilePlan(t.Context(), a, other)
	if prog != nil {
		t.Fatal("a plan that disagrees with topdown was accepted")
	}
	if !strings.Contains(why, "disagree") {
		t.Fatalf("reason %q does not say the evaluators disagree", why)
	}
	// And the matching plan is accepted.
	same := defaultBundleWithData(t, `{"groups": {"publishers": "publishers", "ingest": "ingest", "admins": "admins"}, "namespace_groups": {}}`)
	if prog, why := compilePlan(t.Context(), a, same); prog == nil {
		t.Fatalf("matching plan refused: %s", why)
	}
}

// TestPlanInputValue checks that the plan evaluator sees the whole input
// document as topdown does, field by field.
func TestPlanInputValue(t *testing.T) {
	dir := t.TempDir()
	writeBundleDir(t, dir, "r1", "package floe.authz\n\ndecision := {\"allow\": true, \"reasons\": [json.marshal(input)]}\n")
	in := mergeOp(principal("pat", "publishers"), ActionMerge, "dev", "main", []string{"a", "b"})
	in.Contents[0].Iceberg = &IcebergChange{Operations: []string{"append"}, Updates: []string{"add-snapshot"}, Branches: []string{"b1"}}
	in.RequestID = "req-1"
	var got []string
	for _, ev := range evaluators {
		e := newTestEngine(t, Options{Bundle: dir, Evaluator: ev.option, DecisionCacheSize: -1})
		if e.active.Load().evaluator() != ev.want {
			t.Fatalf("evaluator %q, want %q", e.active.Load().evaluator(), ev.want)
		}
		d, err := e.Decide(t.Context(), in)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, d.Reasons[0])
	}
	if got[0] != got[1] {
		t.Fatalf("plan saw %s\ntopdown saw %s", got[0], got[1])
	}
	var back Input
	if err := json.Unmarshal([]byte(got[0]), &back); err != nil {
		t.Fatal(err)
	}
	if back.RequestID != "req-1" || back.Contents[0].Iceberg.Branches[0] != "b1" {
		t.Fatalf("input seen by the policy lost fields: %s", got[0])
	}
}
