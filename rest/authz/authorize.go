package authz

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// Decider answers authorization questions; *policy.Engine is one.
type Decider interface {
	Decide(ctx context.Context, in policy.Input) (policy.Decision, error)
}

// Guard asks one API's questions.
type Guard struct {
	decider   Decider
	api       string
	principal func(*http.Request) policy.Principal
	requestID func(*http.Request) string
	// tracer, if set, gives every decision a span (see Traced).
	tracer trace.Tracer
}

// NewGuard returns a guard for the API named api ("iceberg", "nessie").
// principal names the caller of a request; requestID, which may be nil,
// ties decisions to the request log.
func NewGuard(d Decider, api string, principal func(*http.Request) policy.Principal, requestID func(*http.Request) string) *Guard {
	return &Guard{decider: d, api: api, principal: principal, requestID: requestID}
}

// Traced makes the guard trace each decision as an "authorize" span, a
// child of the request's, with the action, the ref and the answer. It
// returns g.
func (g *Guard) Traced(tp trace.TracerProvider) *Guard {
	if g != nil && tp != nil {
		g.tracer = tp.Tracer("github.com/floe-catalog/floe/rest/authz")
	}
	return g
}

// ErrUnavailable wraps a failure to reach a decision: callers answer 503,
// and nothing is written.
var ErrUnavailable = errors.New("authorization unavailable")

// DeniedError is a request the policy refused.
type DeniedError struct {
	Action   policy.Action
	Decision policy.Decision
}

func (e *DeniedError) Error() string {
	return fmt.Sprintf("forbidden: %s (decision %s)", strings.Join(e.Decision.Reasons, "; "), e.Decision.ID)
}

// Check asks whether r may do what in describes: nil if allowed, a
// *DeniedError if refused, an error wrapping ErrUnavailable if no answer
// could be had. A nil guard allows everything.
func (g *Guard) Check(r *http.Request, in policy.Input) error {
	if g == nil || g.decider == nil {
		return nil
	}
	in.Version = policy.InputVersion
	in.API = g.api
	in.Principal = g.principal(r)
	if g.requestID != nil {
		in.RequestID = g.requestID(r)
	}
	ctx := r.Context()
	if g.tracer != nil {
		var span trace.Span
		ctx, span = g.tracer.Start(ctx, "authorize")
		defer span.End()
	}
	d, err := g.decider.Decide(ctx, in)
	traceDecision(ctx, in, d, err)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	if !d.Allow {
		if len(d.Reasons) == 0 {
			d.Reasons = []string{"denied by policy"}
		}
		return &DeniedError{Action: in.Action, Decision: d}
	}
	return nil
}

// traceDecision records the question and the answer on the span of
// ctx, if it records.
func traceDecision(ctx context.Context, in policy.Input, d policy.Decision, err error) {
	span := trace.SpanFromContext(ctx)
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(
		attribute.String("floe.api", in.API),
		attribute.String("floe.action", string(in.Action)),
		attribute.String("floe.ref", in.Ref.Name),
		attribute.String("floe.ref_type", in.Ref.Type),
		attribute.Int("floe.contents", len(in.Contents)),
	)
	if in.Target != nil {
		span.SetAttributes(attribute.String("floe.target", in.Target.Name))
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return
	}
	span.SetAttributes(attribute.Bool("floe.allow", d.Allow), attribute.String("floe.decision_id", d.ID))
}

// Read checks a read of ref.
func (g *Guard) Read(r *http.Request, ref policy.Ref) error {
	return g.Check(r, policy.Input{Action: policy.ActionRead, Ref: ref})
}

// Enabled reports whether the guard asks anybody: APIs skip the work of
// describing a request when it does not.
func (g *Guard) Enabled() bool { return g != nil && g.decider != nil }

// RefOf describes a resolved reference expression.
func RefOf(res *versionstore.Resolved) policy.Ref {
	switch {
	case res == nil || res.Ref == nil:
		return policy.Ref{Type: policy.RefDetached}
	case res.Ref.Type == versionstore.Tag:
		return policy.Ref{Name: res.Ref.Name, Type: policy.RefTag}
	default:
		return policy.Ref{Name: res.Ref.Name, Type: policy.RefBranch}
	}
}

// Branch describes a branch by name.
func Branch(name string) policy.Ref { return policy.Ref{Name: name, Type: policy.RefBranch} }

// RefType spells a store reference type the policy's way.
func RefType(t versionstore.RefType) string {
	if t == versionstore.Tag {
		return policy.RefTag
	}
	return policy.RefBranch
}

// ContentType spells a content type the policy's (and Nessie's) way.
func ContentType(t versionstore.ContentType) string {
	switch t {
	case versionstore.Namespace:
		return policy.TypeNamespace
	case versionstore.IcebergTable:
		return policy.TypeTable
	case versionstore.IcebergView:
		return policy.TypeView
	}
	return ""
}

// Changes describes the changes a merge or transplant would write.
func Changes(changes []versionstore.CheckedChange) []policy.Content {
	out := make([]policy.Content, 0, len(changes))
	for _, c := range changes {
		pc := policy.Content{Key: []string(c.Key)}
		switch {
		case c.After == nil:
			pc.Change = policy.ChangeDelete
		case c.Before == nil:
			pc.Change = policy.ChangeCreate
		default:
			pc.Change = policy.ChangeUpdate
		}
		switch {
		case c.After != nil:
			pc.Type = ContentType(c.After.Type)
		case c.Before != nil:
			pc.Type = ContentType(c.Before.Type)
		}
		out = append(out, pc)
	}
	return out
}
