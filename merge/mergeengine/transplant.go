package mergeengine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/floe-catalog/floe/versionstore"
)

// Transplant is TransplantTables with the store's result only, the shape
// of the store's own Transplant.
func (e *Engine) Transplant(ctx context.Context, req versionstore.TransplantRequest) (*versionstore.MergeResult, error) {
	res, err := e.TransplantTables(ctx, req)
	if res == nil {
		return nil, err
	}
	return res.MergeResult, err
}

// TransplantTables replays req.Commits onto req.Target as the store's
// Transplant does. A key that conflicts only because the target changed an
// Iceberg table that one of the commits changes (VALUE_DIFFERS, merge
// behavior NORMAL, no resolution given by the caller) is decided as a
// merge decides it, on the commit's own change: the table before and after
// the commit against the target's (classify.ClassifyTransplant), and where
// allowed the commit's snapshots are cherry-picked onto the target's head
// and written in that commit's replay. A snapshot already on the target
// (merged or transplanted before) is not picked again; a transplant of
// nothing new is a no-op. A key changed by several of the commits keeps its
// plain conflict. Any refusal writes nothing; req.DryRun writes nothing
// either.
func (e *Engine) TransplantTables(ctx context.Context, req versionstore.TransplantRequest) (*Result, error) {
	return e.untilSettled(ctx, "transplant", req.Target, func(ctx context.Context) (*Result, bool, error) { return e.attemptTransplant(ctx, req) })
}

// attemptTransplant is attempt for a transplant.
func (e *Engine) attemptTransplant(ctx context.Context, req versionstore.TransplantRequest) (*Result, bool, error) {
	res, err := e.store.Transplant(ctx, req)
	var ce *versionstore.ConflictError
	if err == nil || res == nil || !errors.As(err, &ce) {
		return &Result{MergeResult: res}, false, err
	}
	keys, ok := e.resolvable(versionstore.MergeRequest{KeyModes: req.KeyModes}, res)
	if !ok {
		return &Result{MergeResult: res}, false, err
	}
	keys = slices.CompactFunc(keys, slices.Equal) // one detail per replayed commit
	changedBy, ok, rerr := e.changingCommits(ctx, req.Commits, keys)
	if rerr != nil {
		return &Result{MergeResult: res}, false, rerr
	}
	if !ok {
		return &Result{MergeResult: res}, false, err // a key several commits change
	}

	// What resolveTable needs of a merge request; no From marks it a
	// transplant (classified by ClassifyTransplant).
	pick := versionstore.MergeRequest{Target: req.Target, FromRef: req.FromRef, DryRun: req.DryRun}
	var w written
	outcomes, refused, modes, err := e.resolveAll(ctx, "transplant", keys, pick, &w,
		func(k versionstore.ContentKey) (base, src, tgt *versionstore.Content, err error) {
			c := changedBy[string(k.Encode())]
			contents, err := e.contentsAt(ctx, []versionstore.ContentKey{k}, c.Parent(), c.Hash, res.EffectiveTargetHash)
			if err != nil {
				return nil, nil, nil, err
			}
			enc := string(k.Encode())
			return contents[0][enc], contents[1][enc], contents[2][enc], nil
		})
	if err != nil {
		w.remove(ctx, e)
		return &Result{MergeResult: res}, false, err
	}
	return e.finish(ctx, req.DryRun, res, ce, keys, outcomes, refused, &w, func(ctx context.Context) (*versionstore.MergeResult, error) {
		final := req
		final.KeyModes = withResolved(req.KeyModes, modes)
		final.ReplayProperties = replayOutcomes(req.ReplayProperties, outcomes, changedBy)
		final.Check = w.check("transplant", req.Target, final.Check)
		return e.store.Transplant(ctx, final)
	})
}

// changingCommits finds, for each key, the one commit of commits that
// changes it; false if some key is changed by more than one (its change
// is then not one commit's snapshots).
func (e *Engine) changingCommits(ctx context.Context, commits []versionstore.Hash, keys []versionstore.ContentKey) (map[string]*versionstore.Commit, bool, error) {
	want := map[string]bool{}
	for _, k := range keys {
		want[string(k.Encode())] = true
	}
	by := map[string]*versionstore.Commit{}
	for _, h := range commits {
		c, err := e.store.ReadCommit(ctx, h)
		if err != nil {
			return nil, false, fmt.Errorf("read transplanted commit %s: %w", h, err)
		}
		for _, op := range c.Operations {
			k := string(op.Key.Encode())
			if !want[k] {
				continue
			}
			if prev, ok := by[k]; ok && prev.Hash != c.Hash {
				return nil, false, nil
			}
			by[k] = c
		}
	}
	return by, len(by) == len(want), nil
}

// replayOutcomes is given with the record of each table merged (see
// classify.PropClass) added to the replay of the commit that changed it.
// given is not modified.
func replayOutcomes(given map[versionstore.Hash]map[string]string, outcomes []TableOutcome,
	changedBy map[string]*versionstore.Commit) map[versionstore.Hash]map[string]string {
	out := maps.Clone(given)
	for _, o := range outcomes {
		c := changedBy[string(o.Key.Encode())]
		if c == nil {
			continue
		}
		props := withOutcomes(out[c.Hash], []TableOutcome{o})
		if len(props) == 0 {
			continue
		}
		if out == nil {
			out = map[versionstore.Hash]map[string]string{}
		}
		out[c.Hash] = props
	}
	return out
}
