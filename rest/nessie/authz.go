package nessie

import (
	"context"
	"errors"
	"net/http"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/versionstore"
)

// unauthenticated answers a request without valid credentials, with one
// message whatever was wrong.
func (a *api) unauthenticated(w http.ResponseWriter, r *http.Request, err error) {
	a.logger.DebugContext(r.Context(), "nessie API request not authenticated",
		"method", r.Method, "path", r.URL.EscapedPath(), "error", err)
	writeJSON(w, http.StatusUnauthorized, errorBody{
		Status: http.StatusUnauthorized, Reason: http.StatusText(http.StatusUnauthorized),
		Message: "Not authorized: missing or invalid bearer token", ErrorCode: codeUnknown,
	})
}

// storedRef describes the reference name names as the store has it: its
// real type, or detached when no reference has that name.
func (a *api) storedRef(name string) policy.Ref {
	if name == "" || name == typeDetached {
		return policy.Ref{Type: policy.RefDetached}
	}
	ref, err := a.store.GetRef(name)
	if err != nil {
		return policy.Ref{Name: name, Type: policy.RefBranch}
	}
	return policy.Ref{Name: ref.Name, Type: authz.RefType(ref.Type)}
}

// refAction checks a reference operation on ref.
func (a *api) refAction(r *http.Request, action policy.Action, ref policy.Ref) error {
	return a.guard.Check(r, policy.Input{Action: action, Ref: ref})
}

// commitContents describes a commit's operations: puts without a content
// id create, puts with one update, deletes name the type the key has at
// the expected head. UNCHANGED writes nothing and is left out.
func (a *api) commitContents(ctx context.Context, at versionstore.Hash, ops []versionstore.Operation) ([]policy.Content, error) {
	out := make([]policy.Content, 0, len(ops))
	for _, op := range ops {
		c := policy.Content{Key: []string(op.Key)}
		switch op.Kind {
		case versionstore.OpPut:
			c.Type = authz.ContentType(op.Content.Type)
			c.Change = policy.ChangeUpdate
			if op.Content.ID == "" {
				c.Change = policy.ChangeCreate
			}
		case versionstore.OpDelete:
			c.Change = policy.ChangeDelete
			existing, err := a.store.GetContent(ctx, at, op.Key)
			switch {
			case err == nil:
				c.Type = authz.ContentType(existing.Type)
			case !errors.Is(err, versionstore.ErrContentNotFound):
				return nil, err
			}
		default:
			continue
		}
		out = append(out, c)
	}
	return out, nil
}

// mergeCheck authorizes a merge or transplant from source into branch with
// exactly the changes the store is about to write. The store calls it on
// the request's goroutine, before the write is queued, and again if the
// target moves so that the changes differ; the policy evaluation and its
// decision log never hold up the branch's other writers.
func (a *api) mergeCheck(r *http.Request, action policy.Action, source policy.Ref, branch string) versionstore.WriteCheck {
	if !a.guard.Enabled() {
		return nil
	}
	target := authz.Branch(branch)
	return func(_ context.Context, changes []versionstore.CheckedChange) error {
		return a.guard.Check(r, policy.Input{Action: action, Ref: source, Target: &target, Contents: authz.Changes(changes)})
	}
}
