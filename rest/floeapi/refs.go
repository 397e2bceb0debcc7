package floeapi

import (
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/housekeeping/refretention"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/versionstore"
)

// ActionExpireRefs is the policy action of an on-demand expiry sweep.
const ActionExpireRefs policy.Action = "admin.refs.expire"

// refRoutes are the operations on references' retention (refretention).
func (a *API) refRoutes() []route {
	return []route{
		{http.MethodGet, "/refs", a.listRefs},
		{http.MethodGet, "/refs/{ref}/retention", a.getRetention},
		{http.MethodPut, "/refs/{ref}/retention", a.putRetention},
		{http.MethodDelete, "/refs/{ref}/retention", a.deleteRetention},
		{http.MethodPost, "/refs/expire", a.expireRefs},
	}
}

// RefStatus is one reference with its retention, as GET /refs lists it.
type RefStatus struct {
	Name    string    `json:"name"`
	Type    string    `json:"type"` // BRANCH or TAG
	Hash    string    `json:"hash"`
	Created time.Time `json:"created"`
	// Age is the time since creation.
	Age        refretention.Duration `json:"age"`
	LastCommit *time.Time            `json:"lastCommit,omitempty"`
	// LastActivity is the later of creation and last commit: what the
	// maximum age counts from.
	LastActivity time.Time             `json:"lastActivity"`
	Retention    EffectiveRetention    `json:"retention"`
	Own          refretention.Settings `json:"own"`
	// ExpiresAt is absent when the reference never expires.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	Expired   bool       `json:"expired"`
}

// EffectiveRetention is the retention that applies to a reference, and
// where each part comes from.
type EffectiveRetention struct {
	MaxAge            refretention.Duration `json:"maxAge"`
	MaxAgeSource      string                `json:"maxAgeSource"`
	KeepCommits       int                   `json:"keepCommits"`
	KeepCommitsSource string                `json:"keepCommitsSource"`
	KeepHistory       refretention.Duration `json:"keepHistory"`
	KeepHistorySource string                `json:"keepHistorySource"`
	Protected         bool                  `json:"protected"`
}

// RefList is the answer of GET /refs.
type RefList struct {
	References []RefStatus `json:"references"`
}

// ExpiredRef is one reference an expiry run deleted (or would).
type ExpiredRef struct {
	Name         string                `json:"name"`
	Type         string                `json:"type"`
	Hash         string                `json:"hash"`
	LastActivity time.Time             `json:"lastActivity"`
	MaxAge       refretention.Duration `json:"maxAge"`
	MaxAgeSource string                `json:"maxAgeSource"`
	ExpiresAt    time.Time             `json:"expiresAt"`
}

// SkippedRef is an expired reference a run left alone.
type SkippedRef struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// ExpireResult is the answer of POST /refs/expire.
type ExpireResult struct {
	DryRun  bool         `json:"dryRun"`
	Checked int          `json:"checked"`
	Expired []ExpiredRef `json:"expired"`
	Skipped []SkippedRef `json:"skipped"`
}

func (a *API) retentionService() (*refretention.Service, error) {
	if a.retention == nil {
		return nil, notConfigured("ref retention")
	}
	return a.retention, nil
}

func refStatusJSON(st *refretention.Status, now time.Time) RefStatus {
	r := st.Ref
	out := RefStatus{
		Name: r.Name, Type: r.Type.String(), Hash: r.Head.String(), Created: r.Created,
		Age:          refretention.Duration(max(now.Sub(r.Created), 0).Truncate(time.Second)),
		LastActivity: st.LastActivity,
		Retention: EffectiveRetention{
			MaxAge: refretention.Duration(st.Retention.MaxAge), MaxAgeSource: st.Retention.MaxAgeSource,
			KeepCommits: st.Retention.History.Commits, KeepCommitsSource: st.Retention.CommitsSource,
			KeepHistory: refretention.Duration(st.Retention.History.Age), KeepHistorySource: st.Retention.AgeSource,
			Protected: st.Retention.Protected,
		},
		Own:     st.Own,
		Expired: st.Expired,
	}
	if !st.LastCommit.IsZero() {
		t := st.LastCommit
		out.LastCommit = &t
	}
	if !st.ExpiresAt.IsZero() {
		t := st.ExpiresAt
		out.ExpiresAt = &t
	}
	return out
}

// listRefs is GET /refs: every reference with its age, last commit,
// retention and expiry.
func (a *API) listRefs(r *http.Request) (any, error) {
	svc, err := a.retentionService()
	if err != nil {
		return nil, err
	}
	if err := a.guard.Read(r, policy.Ref{Type: policy.RefDetached}); err != nil {
		return nil, err
	}
	all, err := svc.List(r.Context())
	if err != nil {
		return nil, err
	}
	now := svc.Now()
	out := RefList{References: make([]RefStatus, 0, len(all))}
	for _, st := range all {
		out.References = append(out.References, refStatusJSON(st, now))
	}
	return out, nil
}

// retentionTarget returns the service and the reference the {ref} path
// variable names. It arrives percent-encoded: a name with slashes is sent
// as ingest%2Fshard-07.
func (a *API) retentionTarget(r *http.Request) (*refretention.Service, *versionstore.Ref, error) {
	svc, err := a.retentionService()
	if err != nil {
		return nil, nil, err
	}
	raw := mux.Vars(r)["ref"]
	name, err := url.PathUnescape(raw)
	if err != nil {
		return nil, nil, badRequest("bad percent-encoding in reference %q", raw)
	}
	if err := versionstore.ValidateRefName(name); err != nil {
		return nil, nil, err
	}
	ref, err := a.store.GetRef(name)
	if err != nil {
		return nil, nil, err
	}
	return svc, ref, nil
}

func policyRef(ref *versionstore.Ref) policy.Ref {
	return policy.Ref{Name: ref.Name, Type: authz.RefType(ref.Type)}
}

func (a *API) answerStatus(r *http.Request, svc *refretention.Service, name string) (any, error) {
	st, err := svc.Status(r.Context(), name)
	if err != nil {
		return nil, err
	}
	return refStatusJSON(st, svc.Now()), nil
}

// getRetention is GET /refs/{ref}/retention.
func (a *API) getRetention(r *http.Request) (any, error) {
	svc, ref, err := a.retentionTarget(r)
	if err != nil {
		return nil, err
	}
	if err := a.guard.Read(r, policyRef(ref)); err != nil {
		return nil, err
	}
	return a.answerStatus(r, svc, ref.Name)
}

// putRetention is PUT /refs/{ref}/retention: it replaces the reference's
// own settings (an absent field inherits the default again).
func (a *API) putRetention(r *http.Request) (any, error) {
	svc, ref, err := a.retentionTarget(r)
	if err != nil {
		return nil, err
	}
	var set refretention.Settings
	if err := decode(r, &set); err != nil {
		return nil, err
	}
	if err := a.guard.Check(r, policy.Input{Action: policy.ActionRetentionRef, Ref: policyRef(ref)}); err != nil {
		return nil, err
	}
	if err := svc.Set(r.Context(), ref.Name, set); err != nil {
		return nil, err
	}
	a.logger.InfoContext(r.Context(), "ref retention set", "ref", ref.Name, "principal", a.principal(r))
	return a.answerStatus(r, svc, ref.Name)
}

// deleteRetention is DELETE /refs/{ref}/retention: the reference
// inherits its defaults again.
func (a *API) deleteRetention(r *http.Request) (any, error) {
	svc, ref, err := a.retentionTarget(r)
	if err != nil {
		return nil, err
	}
	if err := a.guard.Check(r, policy.Input{Action: policy.ActionRetentionRef, Ref: policyRef(ref)}); err != nil {
		return nil, err
	}
	if err := svc.Clear(r.Context(), ref.Name); err != nil {
		return nil, err
	}
	a.logger.InfoContext(r.Context(), "ref retention cleared", "ref", ref.Name, "principal", a.principal(r))
	return a.answerStatus(r, svc, ref.Name)
}

// expireRefs is POST /refs/expire[?dryRun=true]: one expiry sweep now.
func (a *API) expireRefs(r *http.Request) (any, error) {
	svc, err := a.retentionService()
	if err != nil {
		return nil, err
	}
	dryRun := false
	if v := r.URL.Query().Get("dryRun"); v != "" {
		if dryRun, err = strconv.ParseBool(v); err != nil {
			return nil, badRequest("dryRun must be true or false, got %q", v)
		}
	}
	if err := a.guard.Check(r, policy.Input{Action: ActionExpireRefs, Ref: policy.Ref{Type: policy.RefDetached}}); err != nil {
		return nil, err
	}
	res, err := svc.Expire(r.Context(), dryRun)
	if err != nil {
		return nil, err
	}
	out := ExpireResult{DryRun: res.DryRun, Checked: res.Checked, Expired: []ExpiredRef{}, Skipped: []SkippedRef{}}
	for _, e := range res.Expired {
		out.Expired = append(out.Expired, ExpiredRef{Name: e.Name, Type: e.Type.String(), Hash: e.Head.String(),
			LastActivity: e.LastActivity, MaxAge: refretention.Duration(e.MaxAge), MaxAgeSource: e.MaxAgeSource, ExpiresAt: e.ExpiresAt})
	}
	for _, s := range res.Skipped {
		out.Skipped = append(out.Skipped, SkippedRef(s))
	}
	if !dryRun {
		a.logger.InfoContext(r.Context(), "reference expiry run", "principal", a.principal(r), "expired", len(out.Expired))
	}
	return out, nil
}
