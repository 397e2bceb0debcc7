package floeapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	tableclass "github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/versionstore"
)

// MergePlanner plans merges through the merge engine (package
// mergeengine; assemble adapts it, so that this API does not import the
// engine): a dry run of req, which writes nothing, and what it would do
// with each table changed on both sides.
type MergePlanner interface {
	PlanMerge(ctx context.Context, req versionstore.MergeRequest) (*versionstore.MergeResult, []PlannedTable, error)
}

// PlannedTable is what a merge would do with one table changed on both
// sides.
type PlannedTable struct {
	Key            versionstore.ContentKey
	Classification *tableclass.Table
	// Merged: the merge would bring the source's changes (Picked
	// snapshots cherry-picked, or none when all are on the target).
	Merged bool
	Picked int
	Reason string
	// Discard, for a table the plan takes whole from the source (asked
	// with force) although the target changed it, is what of the target
	// the merge would throw away; Classification is nil then.
	Discard *tableclass.Discard
}

func (a *API) mergeRoutes() []route {
	return []route{{http.MethodPost, "/merge-plans", a.planMerge}}
}

// mergePlanRequest is the body of POST /merge-plans.
type mergePlanRequest struct {
	// Source is the ref expression merged from: a branch or tag name,
	// name@hash, or @hash.
	Source string `json:"source"`
	// Target is the branch merged into, optionally branch@hash to plan
	// against that head (a stale hash is a conflict, as in a merge).
	Target string `json:"target"`
	// Force are keys the merge would take whole from the source (merge
	// behavior FORCE): the plan says what each throws away of the target.
	Force [][]string `json:"force"`
}

// MergePlan is the answer of POST /merge-plans, documented in
// openapi.yaml.
type MergePlan struct {
	Source    RefAt  `json:"source"`
	Target    RefAt  `json:"target"`
	MergeBase string `json:"mergeBase"`
	// Mergeable says the merge would succeed now.
	Mergeable bool `json:"mergeable"`
	// Keys are the keys the merge would change or that conflict.
	Keys []PlannedKey `json:"keys"`
	// Tables are the Iceberg tables changed on both sides.
	Tables []PlannedTableJSON `json:"tables"`
}

// RefAt names a ref and the commit planned on.
type RefAt struct {
	Name string `json:"name,omitempty"`
	Hash string `json:"hash"`
}

// PlannedKey is one key of a plan: nil Conflict means it would merge.
type PlannedKey struct {
	Key      []string     `json:"key"`
	Conflict *KeyConflict `json:"conflict"`
}

// KeyConflict is why a key would not merge.
type KeyConflict struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// PlannedTableJSON is PlannedTable as answered.
type PlannedTableJSON struct {
	Key []string `json:"key"`
	// Action is cherry-pick, already-merged, refuse, or force (a key in
	// the request's force that the target changed too).
	Action    string `json:"action"`
	Snapshots int    `json:"snapshots"`
	Reason    string `json:"reason"`
	// Classification is the merge classification (merge/classify/README.md).
	Classification *tableclass.Table `json:"classification,omitempty"`
	// Discards is, for action force, what of the target the merge would
	// throw away: its snapshots since the merge base, their files and
	// rows.
	Discards *tableclass.Discard `json:"discards,omitempty"`
}

// planMerge is POST /merge-plans: a dry run through the merge engine,
// authorized as the merge itself would be (action merge on the target,
// with exactly the changes it would write), that writes nothing.
func (a *API) planMerge(r *http.Request) (any, error) {
	if a.merges == nil {
		return nil, notConfigured("merge planning")
	}
	var body mergePlanRequest
	if err := decode(r, &body); err != nil {
		return nil, err
	}
	if body.Source == "" || body.Target == "" {
		return nil, badRequest("source and target are required")
	}
	ctx := r.Context()
	src, err := a.store.Resolve(ctx, body.Source)
	if err != nil {
		return nil, err
	}
	branch, expected, _ := strings.Cut(body.Target, "@")
	target, err := a.store.GetRef(branch)
	if err != nil {
		return nil, err
	}
	if target.Type != versionstore.Branch {
		return nil, badRequest("target %s is a tag: merges land on branches", branch)
	}
	req := versionstore.MergeRequest{
		Target: branch, ExpectedTarget: target.Head, From: src.Hash, DryRun: true, Committer: a.principal(r),
		Meta: versionstore.CommitMeta{Message: "merge plan"},
	}
	if src.Ref != nil {
		req.FromRef = src.Ref.Name
	}
	for _, k := range body.Force {
		if len(k) == 0 {
			return nil, badRequest("force: a key needs at least one element")
		}
		req.KeyModes = append(req.KeyModes, versionstore.KeyMergeMode{Key: versionstore.ContentKey(k), Behavior: versionstore.MergeForce})
	}
	if expected != "" {
		res, err := a.store.Resolve(ctx, branch+"@"+expected)
		if err != nil {
			return nil, err
		}
		req.ExpectedTarget = res.Hash
	}
	if a.guard.Enabled() {
		source, targetRef := authz.RefOf(src), authz.Branch(branch)
		req.Check = func(_ context.Context, changes []versionstore.CheckedChange) error {
			return a.guard.Check(r, policy.Input{Action: policy.ActionMerge, Ref: source, Target: &targetRef, Contents: authz.Changes(changes)})
		}
	}
	res, tables, err := a.merges.PlanMerge(ctx, req)
	if _, conflicted := errors.AsType[*versionstore.ConflictError](err); err != nil && !(conflicted && res != nil) {
		return nil, err
	}
	plan := &MergePlan{
		Source:    RefAt{Name: req.FromRef, Hash: src.Hash.String()},
		Target:    RefAt{Name: branch, Hash: res.EffectiveTargetHash.String()},
		MergeBase: res.CommonAncestor.String(),
		Mergeable: err == nil,
		Keys:      []PlannedKey{},
		Tables:    []PlannedTableJSON{},
	}
	for _, d := range res.Details {
		k := PlannedKey{Key: []string(d.Key)}
		if d.Conflict != nil {
			k.Conflict = &KeyConflict{Type: string(d.Conflict.Type), Message: d.Conflict.Message}
		}
		plan.Keys = append(plan.Keys, k)
	}
	for _, t := range tables {
		action := "refuse"
		switch {
		case t.Discard != nil:
			action = "force"
		case t.Merged && t.Picked > 0:
			action = "cherry-pick"
		case t.Merged:
			action = "already-merged"
		}
		plan.Tables = append(plan.Tables, PlannedTableJSON{Key: []string(t.Key), Action: action, Snapshots: t.Picked,
			Reason: t.Reason, Classification: t.Classification, Discards: t.Discard})
	}
	return plan, nil
}
