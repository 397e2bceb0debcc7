package mergeengine

import (
	"context"
	"fmt"

	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/versionstore"
)

// Discards reports what a merge throws away of the target by taking the
// source's version of a table whole: each Iceberg table the merge writes
// with merge behavior FORCE although the target changed it since the
// merge base, with the target's snapshots, files and rows that are lost
// (classify.Discard). res is the merge's result (a dry run's, usually):
// its details name the keys and their behavior, its merge base and
// effective target the two sides. A FORCE key the target did not change
// discards nothing and is not listed.
//
// The engine leaves FORCE its Nessie meaning (no classification, no
// refusal); this is the report a client shows before it asks for it. A
// table whose files cannot be read is listed with the reason
// (classify.Discard.Unreadable): a report that says nothing is lost must
// not be a guess. Errors are the store's.
func (e *Engine) Discards(ctx context.Context, req versionstore.MergeRequest, res *versionstore.MergeResult) ([]classify.Discard, error) {
	if res == nil || res.CommonAncestor == (versionstore.Hash{}) {
		return nil, nil
	}
	var keys []versionstore.ContentKey
	for _, d := range res.Details {
		if d.Behavior == versionstore.MergeForce {
			keys = append(keys, d.Key)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	contents, err := e.contentsAt(ctx, keys, res.CommonAncestor, req.From, res.EffectiveTargetHash)
	if err != nil {
		return nil, err
	}
	var out []classify.Discard
	for _, k := range keys {
		enc := string(k.Encode())
		base, src, tgt := contents[0][enc], contents[1][enc], contents[2][enc]
		if !isTable(base) || !isTable(src) || !isTable(tgt) {
			continue // a namespace or view: key level, no rows
		}
		d, err := e.classifier.Discard(ctx, base, src, tgt)
		if err != nil {
			e.logger.WarnContext(ctx, "merge: cannot read what FORCE discards of the target", "key", k.String(), "err", err)
			why := err.Error()
			d = &classify.Discard{Unreadable: why, TargetTotalRecords: -1, Snapshots: []classify.Snapshot{}, StructuralChanges: []string{},
				DataFiles:   classify.FileChanges{Added: []classify.File{}, Removed: []classify.File{}},
				DeleteFiles: classify.FileChanges{Added: []classify.File{}, Removed: []classify.File{}},
				Summary:     "discards the target's changes since the merge base, which floe could not read: " + why}
		}
		if d == nil {
			continue
		}
		d.Key = append([]string{}, k...)
		out = append(out, *d)
	}
	return out, nil
}

func isTable(c *versionstore.Content) bool { return c == nil || c.Type == versionstore.IcebergTable }

// structuralAdvice ends a structural refusal: what the user can do
// instead, and what forcing the source's version would throw away of the
// target (classify.TargetDiscard, from the classification's sides), so
// that nobody takes FORCE for a merge.
func structuralAdvice(key versionstore.ContentKey, c *classify.Table, req versionstore.MergeRequest) string {
	source, target := req.FromRef, req.Target
	if source == "" {
		source = "the source"
	}
	if target == "" {
		target = "the target"
	}
	lost := "which discards the target's changes since the merge base"
	if d := classify.TargetDiscard(c); d != nil {
		lost = "which " + d.Summary
	}
	return fmt.Sprintf(" (never merged automatically: take %s into %s first and resolve it there, then merge again;"+
		" or take %s's version whole with FORCE and --discard-target-changes (floe merge %s --into %s --mode %s=FORCE --discard-target-changes), %s)",
		target, source, source, source, target, key, lost)
}
