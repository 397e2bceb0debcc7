package policy

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/prometheus/client_golang/prometheus"
)

func newTestEngine(t *testing.T, opts Options) *Engine {
	t.Helper()
	e, err := New(t.Context(), opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func principal(id string, groups ...string) Principal {
	return Principal{ID: id, Groups: groups}
}

func branchRef(name string) Ref { return Ref{Name: name, Type: RefBranch} }

func tagRef(name string) Ref { return Ref{Name: name, Type: RefTag} }

func op(p Principal, a Action, ref Ref) Input {
	return Input{Version: InputVersion, Principal: p, Action: a, API: "nessie", Ref: ref}
}

func mergeOp(p Principal, a Action, source, target string, keys ...[]string) Input {
	in := op(p, a, branchRef(source))
	t := branchRef(target)
	in.Target = &t
	for _, k := range keys {
		in.Contents = append(in.Contents, Content{Key: k, Type: TypeTable, Change: ChangeUpdate})
	}
	return in
}

func withContents(in Input, keys ...[]string) Input {
	for _, k := range keys {
		in.Contents = append(in.Contents, Content{Key: k, Type: TypeTable, Change: ChangeUpdate})
	}
	return in
}

// evaluators are the settings of Options.Evaluator that tests of decisions
// run under, with the evaluator each must end up using.
var evaluators = []struct{ option, want string }{
	{EvaluatorAuto, evaluatorPlan},
	{EvaluatorTopdown, evaluatorTopdown},
}

func TestDecideDefaultBundle(t *testing.T) {
	for _, ev := range evaluators {
		t.Run(ev.option, func(t *testing.T) {
			e := newTestEngine(t, Options{Evaluator: ev.option, DecisionCacheSize: -1})
			if got := e.active.Load().evaluator(); got != ev.want {
				t.Fatalf("evaluator %q, want %q (%s)", got, ev.want, e.active.Load().topdownWhy)
			}
			testDecideDefaultBundle(t, e)
		})
	}
}

func testDecideDefaultBundle(t *testing.T, e *Engine) {
	if got := e.Revision(); got != "default-1" {
		t.Fatalf("Revision() = %q, want default-1", got)
	}
	alice := principal("alice")
	bob := principal("bob")
	pub := principal("pat", "publishers")
	admin := principal("root", "admins")
	ingest := principal("ing", "ingest")
	finPub := principal("fin", "publishers", "finance")

	tests := []struct {
		name   string
		in     Input
		allow  bool
		reason string // substring of some reason
	}{
		{"anonymous read", op(Principal{Anonymous: true}, ActionRead, branchRef("main")), false, "authentication required"},
		{"read main", op(bob, ActionRead, branchRef("main")), true, "reads are allowed"},
		{"read tag", op(bob, ActionRead, tagRef("v1")), true, "reads are allowed"},
		{"wrong input version", Input{Version: 9, Principal: alice, Action: ActionRead, Ref: branchRef("main")}, false, "input version 9"},
		{"commit own branch", op(alice, ActionCommit, branchRef("users/alice/x")), true, "users/alice/ branches belong to alice"},
		{"table write own branch", op(alice, ActionWriteTable, branchRef("users/alice")), true, "belong to alice"},
		{"commit other's branch", op(bob, ActionCommit, branchRef("users/alice/x")), false, "no rule allows commit on branch users/alice/x"},
		{"create own branch", op(alice, ActionCreateRef, branchRef("users/alice/new")), true, "belong to alice"},
		{"delete own branch", op(alice, ActionDeleteRef, branchRef("users/alice/new")), true, "belong to alice"},
		{"commit to main", op(pub, ActionCommit, branchRef("main")), false, "main is written only through merges by group publishers"},
		{"table create on main", op(admin, ActionCreateTable, branchRef("main")), false, "main is written only through merges"},
		{"assign main", op(admin, ActionAssignRef, branchRef("main")), false, "main is written only through merges"},
		{"delete main admin", op(admin, ActionDeleteRef, branchRef("main")), false, "branch main can never be deleted"},
		{"merge to main publisher", mergeOp(pub, ActionMerge, "dev", "main", []string{"sales", "orders"}), true, "group publishers may merge into main"},
		{"transplant to main publisher", mergeOp(pub, ActionTransplant, "dev", "main"), true, "may merge into main"},
		{"merge to main non-publisher", mergeOp(alice, ActionMerge, "users/alice/x", "main"), false, "main is written only through merges"},
		{"merge into own branch", mergeOp(alice, ActionMerge, "main", "users/alice/x"), true, "belong to alice"},
		{"ingest writes ingest", op(ingest, ActionWriteTable, branchRef("ingest/shard-07")), true, "ingest/ branches are writable by group ingest"},
		{"non-ingest writes ingest", op(alice, ActionCommit, branchRef("ingest/shard-07")), false, "no rule allows commit on branch ingest/shard-07"},
		{"admin creates branch", op(admin, ActionCreateRef, branchRef("dev")), true, "group admins may manage branches"},
		{"admin deletes user branch", op(admin, ActionDeleteRef, branchRef("users/bob/x")), true, "may manage branches"},
		{"admin commits dev", op(admin, ActionCommit, branchRef("dev")), false, "no rule allows commit on branch dev"},
		{"create tag", op(bob, ActionCreateRef, tagRef("v1")), true, "may create tags"},
		{"assign tag non-admin", op(pub, ActionAssignRef, tagRef("v1")), false, "tags are immutable except for group admins"},
		{"delete tag non-admin", op(bob, ActionDeleteRef, tagRef("v1")), false, "tags are immutable"},
		{"assign tag admin", op(admin, ActionAssignRef, tagRef("v1")), true, "may move and delete tags"},
		{"delete tag admin", op(admin, ActionDeleteRef, tagRef("v1")), true, "may move and delete tags"},
		{"commit to tag", op(admin, ActionCommit, tagRef("v1")), false, "tag v1 is read-only"},
		{"write detached", op(alice, ActionWriteTable, Ref{Type: RefDetached}), false, "detached ref is read-only"},
		{"finance write without group", withContents(op(alice, ActionWriteTable, branchRef("users/alice/x")), []string{"finance", "ledger"}), false, "write to finance.ledger requires group finance"},
		{"cross-table merge without finance", mergeOp(pub, ActionMerge, "dev", "main", []string{"sales", "orders"}, []string{"finance", "ledger"}), false, "write to finance.ledger requires group finance"},
		{"cross-table merge with finance", mergeOp(finPub, ActionMerge, "dev", "main", []string{"sales", "orders"}, []string{"finance", "ledger"}), true, "may merge into main"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := e.Decide(t.Context(), tc.in)
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if d.Allow != tc.allow {
				t.Fatalf("allow = %v, want %v (reasons %q)", d.Allow, tc.allow, d.Reasons)
			}
			if len(d.Reasons) == 0 {
				t.Fatalf("no reasons")
			}
			if !containsSubstring(d.Reasons, tc.reason) {
				t.Fatalf("reasons %q lack %q", d.Reasons, tc.reason)
			}
			if d.ID == "" {
				t.Fatal("empty decision ID")
			}
		})
	}
}

func containsSubstring(ss []string, sub string) bool {
	for _, s := range ss {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

func TestDecideMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newTestEngine(t, Options{Metrics: reg})
	if _, err := e.Decide(t.Context(), op(principal("a"), ActionRead, branchRef("main"))); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Decide(t.Context(), op(principal("a"), ActionCommit, branchRef("main"))); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"floe_policy_decisions_total", map[string]string{"result": "allow"}, 1},
		{"floe_policy_decisions_total", map[string]string{"result": "deny"}, 1},
		{"floe_policy_eval_duration_seconds", nil, 2},
		{"floe_policy_bundle_activations_total", map[string]string{"outcome": "ok"}, 1},
		{"floe_policy_bundle_info", map[string]string{"revision": "default-1"}, 1},
	}
	for _, c := range checks {
		if got := metricValue(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	// A second engine on the same registry is refused while the first
	// lives, and accepted after Close.
	if _, err := New(t.Context(), Options{Metrics: reg}); err == nil {
		t.Error("second engine on one registry: want error")
	}
	_ = e.Close()
	e2, err := New(t.Context(), Options{Metrics: reg})
	if err != nil {
		t.Fatalf("engine after Close on same registry: %v", err)
	}
	_ = e2.Close()
}

func TestDecideCancelledContextIsError(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newTestEngine(t, Options{Metrics: reg})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := e.Decide(ctx, op(principal("a"), ActionRead, branchRef("main"))); err == nil {
		t.Fatal("Decide with cancelled context: want error")
	}
	if got := metricValue(t, reg, "floe_policy_decisions_total", map[string]string{"result": "error"}); got != 1 {
		t.Errorf("error decisions = %v, want 1", got)
	}
}

// TestInputValueMatchesJSON keeps the hand-written conversion in step with
// the json tags of input.go.
func TestInputValueMatchesJSON(t *testing.T) {
	inputs := []Input{
		op(principal("alice"), ActionRead, branchRef("main")),
		op(Principal{Anonymous: true}, ActionRead, Ref{Type: RefDetached}),
		mergeOp(principal("pat", "publishers", "finance"), ActionMerge, "dev", "main", []string{"a", "b"}, []string{"finance", "ledger"}),
		{
			Version: InputVersion, Principal: principal("x", "g"), Action: ActionWriteTable, API: "iceberg",
			Ref: branchRef("users/x/y"), RequestID: "req-1",
			Contents: []Content{
				{Key: []string{"ns", "t"}, Type: TypeTable, Change: ChangeUpdate, Iceberg: &IcebergChange{
					Operations: []string{"append", "schema-change"}, Updates: []string{"add-snapshot", "set-snapshot-ref"}, Branches: []string{"main"},
				}},
				{Key: []string{"ns", "gone"}, Change: ChangeDelete, Iceberg: &IcebergChange{}},
			},
		},
		{
			Version: InputVersion, Principal: principal("x"), Action: ActionStorageWrite, API: "iceberg",
			Ref:      branchRef("users/x/y"),
			Contents: []Content{{Key: []string{"ns", "t"}, Type: TypeTable, Change: ChangeUpdate}},
			Storage: &StorageRequest{Provider: "s3", Method: "PUT", Operation: "put-object", Bucket: "b",
				Key: "wh/ns/t-1/data/f.parquet", Table: []string{"ns", "t"}, TableLocation: "s3://b/wh/ns/t-1"},
		},
	}
	for i, in := range inputs {
		bs, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		want, err := ast.ValueFromReader(strings.NewReader(string(bs)))
		if err != nil {
			t.Fatal(err)
		}
		if got := in.astValue(); got.Compare(want) != 0 {
			t.Errorf("input %d:\n got %v\nwant %v", i, got, want)
		}
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"both sources", Options{Bundle: "x", BundleURL: "http://x/b"}, "mutually exclusive"},
		{"key without source", Options{VerificationKey: "secret"}, "needs Bundle or BundleURL"},
		{"bad alg", Options{Bundle: "x", VerificationKey: "secret", VerificationAlg: "none"}, "unsupported"},
		{"missing bundle", Options{Bundle: "/nonexistent/bundle"}, "/nonexistent/bundle"},
		{"not http", Options{BundleURL: "file:///tmp/b.tar.gz"}, "not an http(s) URL"},
		{"unknown evaluator", Options{Evaluator: "wasm"}, `unknown evaluator "wasm"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(t.Context(), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New err = %v, want containing %q", err, tc.want)
			}
		})
	}
}

// TestMalformedDecisionsDeny runs policies whose decision is not the
// documented shape: each denies with a reason that says what is wrong.
func TestMalformedDecisionsDeny(t *testing.T) {
	for _, tc := range []struct {
		name, decision string
		allow          bool
		reason         string
	}{
		{"undefined", `decision := {"allow": true} if input.action == "never"`, false, "is undefined"},
		{"not an object", `decision := true`, false, "is not an object"},
		{"allow missing", `decision := {"reasons": ["x"]}`, false, `"allow" is not a boolean`},
		{"allow a string", `decision := {"allow": "yes", "reasons": []}`, false, `"allow" is not a boolean`},
		{"reasons not an array", `decision := {"allow": true, "reasons": "x"}`, false, `"reasons" is not an array`},
		{"reasons hold a number", `decision := {"allow": true, "reasons": ["x", 1]}`, false, `"reasons" holds a non-string`},
		{"reasons missing", `decision := {"allow": true}`, true, ""},
		{"denial without reasons", `decision := {"allow": false, "reasons": []}`, false, reasonDenied},
	} {
		for _, ev := range evaluators {
			t.Run(tc.name+"/"+ev.option, func(t *testing.T) {
				dir := t.TempDir()
				writeBundleDir(t, dir, "r1", "package floe.authz\n\n"+tc.decision+"\n")
				e := newTestEngine(t, Options{Bundle: dir, DecisionCacheSize: -1, Evaluator: ev.option})
				if got := e.active.Load().evaluator(); got != ev.want {
					t.Fatalf("evaluator %q, want %q (%s)", got, ev.want, e.active.Load().topdownWhy)
				}
				d, err := e.Decide(t.Context(), op(principal("alice"), ActionRead, branchRef("main")))
				if err != nil {
					t.Fatal(err)
				}
				if d.Allow != tc.allow {
					t.Fatalf("allow = %v, want %v (reasons %q)", d.Allow, tc.allow, d.Reasons)
				}
				if tc.reason == "" {
					if len(d.Reasons) != 0 {
						t.Fatalf("reasons = %q, want none", d.Reasons)
					}
					return
				}
				if !containsSubstring(d.Reasons, tc.reason) {
					t.Fatalf("reasons = %q, want one containing %q", d.Reasons, tc.reason)
				}
			})
		}
	}
}
