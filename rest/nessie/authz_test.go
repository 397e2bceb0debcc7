package nessie_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/rest/nessie"
)

// policyStub refuses what its deny set names ("<action> <ref>" or
// "<action> <key>") and records every question.
type policyStub struct {
	mu     sync.Mutex
	deny   map[string]bool
	inputs []policy.Input
}

func (p *policyStub) Decide(_ context.Context, in policy.Input) (policy.Decision, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inputs = append(p.inputs, in)
	names := []string{in.Ref.Name}
	for _, c := range in.Contents {
		names = append(names, strings.Join(c.Key, "."))
	}
	for _, n := range names {
		if p.deny[string(in.Action)+" "+n] {
			return policy.Decision{ID: "d", Reasons: []string{string(in.Action) + " of " + n + " refused"}}, nil
		}
	}
	return policy.Decision{ID: "d", Allow: true}, nil
}

func (p *policyStub) set(rule string, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deny[rule] = on
}

func (p *policyStub) last(t *testing.T, action policy.Action) policy.Input {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.inputs) - 1; i >= 0; i-- {
		if p.inputs[i].Action == action {
			return p.inputs[i]
		}
	}
	t.Fatalf("no %s decision was asked for", action)
	return policy.Input{}
}

// TestAuthorization: what the Nessie API asks the policy, and that a
// refused commit, merge or transplant writes nothing.
func TestAuthorization(t *testing.T) {
	p := &policyStub{deny: map[string]bool{}}
	bob := func(*http.Request) policy.Principal { return policy.Principal{ID: "bob", Groups: []string{"g"}} }
	e := newEnvWith(t, func(d *nessie.Deps) {
		d.Guard = authz.NewGuard(p, "nessie", bob, nil)
	})

	e.commit("main", "setup", put(namespace("db"), "db"), put(table("/w/a1", 1), "db", "a"), put(table("/w/s1", 1), "db", "secret"))
	in := p.last(t, policy.ActionCommit)
	if in.API != "nessie" || in.Principal.ID != "bob" || in.Ref != (policy.Ref{Name: "main", Type: policy.RefBranch}) || len(in.Contents) != 3 {
		t.Fatalf("commit asked %+v", in)
	}
	for _, c := range in.Contents {
		if c.Change != policy.ChangeCreate || c.Type == "" {
			t.Fatalf("commit of new keys asked %+v", in.Contents)
		}
	}

	e.branch("dev", "main")
	if in := p.last(t, policy.ActionCreateRef); in.Ref != (policy.Ref{Name: "dev", Type: policy.RefBranch}) {
		t.Fatalf("create branch asked %+v", in)
	}
	var got struct {
		Content content `json:"content"`
	}
	e.ok(http.MethodGet, "/trees/dev/contents/db.a", nil, http.StatusOK, &got)
	a2 := table("/w/a2", 2)
	a2.ID = got.Content.ID
	e.ok(http.MethodGet, "/trees/dev/contents/db.secret", nil, http.StatusOK, &got)
	s2 := table("/w/s2", 2)
	s2.ID = got.Content.ID
	dev := e.commit("dev", "change both", put(a2, "db", "a"), put(s2, "db", "secret"))
	if in := p.last(t, policy.ActionCommit); in.Contents[0].Change != policy.ChangeUpdate {
		t.Fatalf("update asked %+v", in.Contents)
	}

	// A merge is decided on every key it writes on the target; one refused
	// key refuses it all, dry run or not, and main does not move.
	p.set("merge db.secret", true)
	mainHead := e.head("main")
	path := "/trees/" + url.PathEscape("main@"+mainHead) + "/history/merge"
	for _, dry := range []bool{true, false} {
		ne := e.fail(http.MethodPost, path, map[string]any{"fromRefName": "dev", "fromHash": dev.TargetBranch.Hash, "dryRun": dry}, http.StatusForbidden, "FORBIDDEN")
		if !strings.Contains(ne.Message, "merge of db.secret refused") {
			t.Fatalf("refused merge says %q", ne.Message)
		}
	}
	in = p.last(t, policy.ActionMerge)
	keys := []string{}
	for _, c := range in.Contents {
		keys = append(keys, strings.Join(c.Key, "."))
	}
	slices.Sort(keys)
	if in.Target == nil || in.Target.Name != "main" || in.Ref.Name != "dev" || !slices.Equal(keys, []string{"db.a", "db.secret"}) {
		t.Fatalf("merge asked %+v (keys %v)", in, keys)
	}
	p.set("transplant db.secret", true)
	e.fail(http.MethodPost, "/trees/"+url.PathEscape("main@"+mainHead)+"/history/transplant",
		map[string]any{"fromRefName": "dev", "hashesToTransplant": []string{dev.TargetBranch.Hash}}, http.StatusForbidden, "FORBIDDEN")
	if e.head("main") != mainHead {
		t.Fatal("a refused merge or transplant moved main")
	}
	p.set("merge db.secret", false)
	e.ok(http.MethodPost, path, map[string]any{"fromRefName": "dev", "fromHash": dev.TargetBranch.Hash}, http.StatusOK, nil)

	// A refused commit writes nothing.
	p.set("commit db.b", true)
	before := e.head("dev")
	e.fail(http.MethodPost, "/trees/"+url.PathEscape("dev@"+before)+"/history/commit",
		map[string]any{"commitMeta": map[string]any{"message": "x"}, "operations": []operation{put(table("/w/b", 1), "db", "b")}}, http.StatusForbidden, "FORBIDDEN")
	if e.head("dev") != before {
		t.Fatal("a refused commit moved dev")
	}

	// Deleting a reference is asked about with its real type; reads of a
	// refused reference fail, and listings leave it out.
	p.set("ref.delete dev", true)
	e.fail(http.MethodDelete, "/trees/"+url.PathEscape("dev@"+before), nil, http.StatusForbidden, "FORBIDDEN")
	p.set("read dev", true)
	e.fail(http.MethodGet, "/trees/dev/entries", nil, http.StatusForbidden, "FORBIDDEN")
	var refs struct{ References []reference }
	e.ok(http.MethodGet, "/trees", nil, http.StatusOK, &refs)
	if len(refs.References) != 1 || refs.References[0].Name != "main" {
		t.Fatalf("listing with dev unreadable: %+v", refs.References)
	}
}
