package policy

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/prometheus/client_golang/prometheus"
)

func TestCacheable(t *testing.T) {
	for _, tc := range []struct {
		name, rego string
		want       bool
	}{
		{"plain rules", `decision := {"allow": input.action == "read", "reasons": []}`, true},
		{"time", `decision := {"allow": time.now_ns() > 0, "reasons": []}`, false},
		{"random", `decision := {"allow": rand.intn("x", 2) == 0, "reasons": []}`, false},
		{"request id", `decision := {"allow": input.request_id != "", "reasons": []}`, false},
		{"whole input", `decision := {"allow": true, "reasons": [sprintf("%v", [input])]}`, false},
		{"input fields", `decision := {"allow": input.principal.id == "a", "reasons": [input.ref.name]}`, true},
		{"test with input", "decision := {\"allow\": true, \"reasons\": []}\ntest_x if decision.allow with input as {\"a\": 1}", true},
		{"with time", "decision := {\"allow\": true, \"reasons\": []}\ntest_x if decision.allow with input as {\"t\": time.now_ns()}", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ast.ParseModule("p.rego", "package floe.authz\n\n"+tc.rego+"\n")
			if err != nil {
				t.Fatal(err)
			}
			if got := cacheable(map[string]*ast.Module{"p.rego": m}); got != tc.want {
				t.Errorf("cacheable = %v, want %v", got, tc.want)
			}
		})
	}
	// The bundle floe ships must be cacheable, or the cache never runs.
	e := newTestEngine(t, Options{})
	if e.active.Load().cache == nil {
		t.Fatal("the default bundle is not cached")
	}
}

// TestCacheKeyDistinguishesInputs: inputs that differ anywhere but in
// request_id have different keys, and request_id does not matter.
func TestCacheKeyDistinguishesInputs(t *testing.T) {
	base := mergeOp(principal("pat", "publishers"), ActionMerge, "dev", "main", []string{"db", "t"})
	base.Contents[0].Iceberg = &IcebergChange{Operations: []string{"append"}, Updates: []string{"add-snapshot"}, Branches: []string{"main"}}
	mutations := map[string]func(*Input){
		"version":      func(in *Input) { in.Version = 2 },
		"principal":    func(in *Input) { in.Principal.ID = "pat2" },
		"groups":       func(in *Input) { in.Principal.Groups = []string{"publishers", "x"} },
		"nil groups":   func(in *Input) { in.Principal.Groups = nil },
		"empty groups": func(in *Input) { in.Principal.Groups = []string{} },
		"anonymous":    func(in *Input) { in.Principal.Anonymous = true },
		"action":       func(in *Input) { in.Action = ActionTransplant },
		"api":          func(in *Input) { in.API = "iceberg" },
		"ref":          func(in *Input) { in.Ref.Name = "dev2" },
		"ref type":     func(in *Input) { in.Ref.Type = RefTag },
		"no target":    func(in *Input) { in.Target = nil },
		"target":       func(in *Input) { in.Target = &Ref{Name: "main2", Type: RefBranch} },
		"key":          func(in *Input) { in.Contents[0].Key = []string{"db", "u"} },
		"key split":    func(in *Input) { in.Contents[0].Key = []string{"dbt"} },
		"change":       func(in *Input) { in.Contents[0].Change = ChangeCreate },
		"type":         func(in *Input) { in.Contents[0].Type = TypeView },
		"operation":    func(in *Input) { in.Contents[0].Iceberg.Operations = []string{"delete"} },
		"no iceberg":   func(in *Input) { in.Contents[0].Iceberg = nil },
		"more content": func(in *Input) { in.Contents = append(in.Contents, Content{Key: []string{"db"}, Change: ChangeUpdate}) },
	}
	clone := func() Input {
		var in Input
		raw, _ := json.Marshal(base)
		_ = json.Unmarshal(raw, &in)
		return in
	}
	keys := map[string]string{base.cacheKey(): "base"}
	for name, mutate := range mutations {
		in := clone()
		mutate(&in)
		k := in.cacheKey()
		if other, dup := keys[k]; dup {
			t.Errorf("%s has the key of %s", name, other)
		}
		keys[k] = name
	}
	in := clone()
	in.RequestID = "another request"
	if in.cacheKey() != base.cacheKey() {
		t.Error("request_id changed the key")
	}
}

// TestDecisionCache: a repeated question is answered from the cache with
// the same decision (and logged as cached), a fresh activation starts
// empty, and size -1 turns the cache off.
func TestDecisionCache(t *testing.T) {
	var log lockedBuffer
	reg := prometheus.NewRegistry()
	dir := t.TempDir()
	writeBundleDir(t, dir, "r1", revisionPolicy("r1"))
	e := newTestEngine(t, Options{Bundle: dir, DecisionLog: &log, Metrics: reg})
	in := op(principal("alice"), ActionRead, branchRef("main"))
	first, err := e.Decide(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	in.RequestID = "r-2"
	second, err := e.Decide(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if first.Allow != second.Allow || !slices.Equal(first.Reasons, second.Reasons) || first.ID == second.ID {
		t.Fatalf("cached decision %+v differs from %+v (or shares its id)", second, first)
	}
	second.Reasons[0] = "changed by the caller"
	third, _ := e.Decide(t.Context(), in)
	if third.Reasons[0] != "policy r1" {
		t.Fatalf("a caller's change reached the cache: %q", third.Reasons[0])
	}
	if hits := metricValue(t, reg, "floe_policy_decision_cache_total", map[string]string{"result": "hit"}); hits != 2 {
		t.Fatalf("cache hits = %v, want 2", hits)
	}
	lines := log.lines(t)
	if len(lines) != 3 || bytes.Contains(lines[0]["cached"], []byte("true")) || !bytes.Equal(lines[1]["cached"], []byte("true")) {
		t.Fatalf("decision log cached flags: %v", lines)
	}

	// A new bundle answers for itself, not from the old cache.
	writeBundleDir(t, dir, "r2", revisionPolicy("r2"))
	if err := e.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if d, _ := e.Decide(t.Context(), in); d.Reasons[0] != "policy r2" {
		t.Fatalf("after activating r2 the answer is %q", d.Reasons[0])
	}

	off := newTestEngine(t, Options{DecisionCacheSize: -1, Metrics: prometheus.NewRegistry()})
	if off.active.Load().cache != nil {
		t.Fatal("DecisionCacheSize -1 left the cache on")
	}
}

func TestDecisionCacheEviction(t *testing.T) {
	c := newDecisionCache(2)
	c.put("a", cachedDecision{allow: true})
	c.put("b", cachedDecision{})
	c.put("c", cachedDecision{})
	if _, ok := c.get("a"); ok {
		t.Error("the oldest entry survived a full cache")
	}
	for _, k := range []string{"b", "c"} {
		if _, ok := c.get(k); !ok {
			t.Errorf("%s was evicted", k)
		}
	}
	if len(c.byKey) != 2 {
		t.Errorf("cache holds %d entries, want 2", len(c.byKey))
	}
}
