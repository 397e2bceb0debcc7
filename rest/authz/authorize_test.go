package authz

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// deciderFunc adapts a function to Decider.
type deciderFunc func(context.Context, policy.Input) (policy.Decision, error)

func (f deciderFunc) Decide(ctx context.Context, in policy.Input) (policy.Decision, error) {
	return f(ctx, in)
}

func TestGuardCheck(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	alice := func(*http.Request) policy.Principal { return policy.Principal{ID: "alice", Groups: []string{"g"}} }
	var seen policy.Input
	answer := func(d policy.Decision, err error) Decider {
		return deciderFunc(func(_ context.Context, in policy.Input) (policy.Decision, error) {
			seen = in
			return d, err
		})
	}
	var nilGuard *Guard
	if err := nilGuard.Check(r, policy.Input{Action: policy.ActionCommit}); err != nil || nilGuard.Enabled() {
		t.Fatalf("nil guard: %v, enabled %v; want everything allowed", err, nilGuard.Enabled())
	}

	g := NewGuard(answer(policy.Decision{ID: "d1", Allow: true}, nil), "nessie", alice, func(*http.Request) string { return "req-1" })
	if err := g.Read(r, Branch("main")); err != nil {
		t.Fatalf("allowed read: %v", err)
	}
	want := policy.Input{Version: policy.InputVersion, Principal: alice(r), Action: policy.ActionRead, API: "nessie",
		Ref: policy.Ref{Name: "main", Type: policy.RefBranch}, RequestID: "req-1"}
	if seen.Version != want.Version || seen.Principal.ID != "alice" || seen.Action != want.Action || seen.API != want.API || seen.Ref != want.Ref || seen.RequestID != want.RequestID {
		t.Fatalf("input %+v, want %+v", seen, want)
	}

	g = NewGuard(answer(policy.Decision{ID: "d2"}, nil), "iceberg", alice, nil)
	err := g.Check(r, policy.Input{Action: policy.ActionCommit})
	de, ok := errors.AsType[*DeniedError](err)
	if !ok || de.Action != policy.ActionCommit || !slices.Equal(de.Decision.Reasons, []string{"denied by policy"}) {
		t.Fatalf("denial without reasons: %v; want a DeniedError with a default reason", err)
	}

	g = NewGuard(answer(policy.Decision{}, errors.New("eval failed")), "iceberg", alice, nil)
	if err := g.Check(r, policy.Input{}); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("engine failure: %v, want ErrUnavailable", err)
	}
}

func TestChanges(t *testing.T) {
	tbl := &versionstore.Content{Type: versionstore.IcebergTable}
	view := &versionstore.Content{Type: versionstore.IcebergView}
	ns := &versionstore.Content{Type: versionstore.Namespace}
	got := Changes([]versionstore.CheckedChange{
		{Key: versionstore.ContentKey{"db", "new"}, Kind: versionstore.OpPut, After: tbl},
		{Key: versionstore.ContentKey{"db", "v"}, Kind: versionstore.OpPut, Before: view, After: view},
		{Key: versionstore.ContentKey{"db"}, Kind: versionstore.OpDelete, Before: ns},
	})
	want := []policy.Content{
		{Key: []string{"db", "new"}, Type: policy.TypeTable, Change: policy.ChangeCreate},
		{Key: []string{"db", "v"}, Type: policy.TypeView, Change: policy.ChangeUpdate},
		{Key: []string{"db"}, Type: policy.TypeNamespace, Change: policy.ChangeDelete},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d changes, want %d", len(got), len(want))
	}
	for i := range want {
		if !slices.Equal(got[i].Key, want[i].Key) || got[i].Type != want[i].Type || got[i].Change != want[i].Change {
			t.Errorf("change %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestRefOf(t *testing.T) {
	for _, tc := range []struct {
		res  *versionstore.Resolved
		want policy.Ref
	}{
		{nil, policy.Ref{Type: policy.RefDetached}},
		{&versionstore.Resolved{}, policy.Ref{Type: policy.RefDetached}},
		{&versionstore.Resolved{Ref: &versionstore.Ref{Name: "v1", Type: versionstore.Tag}}, policy.Ref{Name: "v1", Type: policy.RefTag}},
		{&versionstore.Resolved{Ref: &versionstore.Ref{Name: "main", Type: versionstore.Branch}}, policy.Ref{Name: "main", Type: policy.RefBranch}},
	} {
		if got := RefOf(tc.res); got != tc.want {
			t.Errorf("RefOf(%+v) = %+v, want %+v", tc.res, got, tc.want)
		}
	}
}
