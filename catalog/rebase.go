package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/tablemerge"
)

// PropRebaseAppends is the table property that turns zero-retry appends
// off for a table when "false", and with them zero-retry row-level
// commits (PropRebaseRowLevel).
const PropRebaseAppends = "floe.commit.rebase-appends"

// Zero-retry appends. An engine's append commits add-snapshot and
// set-snapshot-ref main with assert-ref-snapshot-id on the main it read.
// On a hot table another writer has usually moved main by the time it
// arrives, and the spec's answer (409, reload, rebuild the manifest list,
// commit again) makes writers retry in proportion to their number. An
// append needs nothing of the files it did not see (it reads none, deletes
// none), so the server re-lists its manifests on top of the new head
// itself (tablemerge.CherryPick) and commits that: the client succeeds on
// its first attempt, with the rebased metadata in the answer.
//
// An append is rebased whenever it is certainly one: isolation levels
// (write.delete/update/merge.isolation-level) constrain overwrites,
// deletes and merges, not appends, and an append placed after any commit
// is a serial order. Row-level commits (overwrite, delete, replace) are
// rebased when they do not really conflict with what main gained since
// their base, by the rules in rebaserows.go, which checks the isolation
// level. Anything else answers 409 as before.

// staleAppend is a commit whose only failed requirement is main's
// assert-ref-snapshot-id and which may be a rebaseable append.
type staleAppend struct {
	asserted *int64 // the main the client read; nil: the table had none
}

// staleMainRef reports whether rq is an assert-ref-snapshot-id on main
// (which it failed), and the snapshot it asserted.
func staleMainRef(rq table.Requirement) (*staleAppend, bool) {
	if rq.GetType() != "assert-ref-snapshot-id" {
		return nil, false
	}
	raw, err := json.Marshal(rq)
	if err != nil {
		return nil, false
	}
	var r struct {
		Ref        string `json:"ref"`
		SnapshotID *int64 `json:"snapshot-id"`
	}
	if json.Unmarshal(raw, &r) != nil || r.Ref != table.MainBranch {
		return nil, false
	}
	return &staleAppend{asserted: r.SnapshotID}, true
}

// rebaseAppend re-parents the append, or the row-level commit
// (rebaseRowLevel), in updates onto main of base (the current head),
// returning the metadata builder to build and the manifest lists it
// wrote. Every error is an errNotRebaseable (the commit is neither a pure
// append nor a row-level commit on an ancestor of main, the table opted
// out, or the rebase failed) or an errRebaseConflict (a row-level commit
// that really conflicts); the caller answers 409 as if no rebase were
// tried.
func (s *Service) rebaseAppend(ctx context.Context, wh *icebergtable.Warehouse, base table.Metadata, baseLoc string, sa *staleAppend, updates table.Updates) (*table.MetadataBuilder, []string, error) {
	if base.Properties()[PropRebaseAppends] == "false" {
		return nil, nil, notRebaseable("the table sets %s=false", PropRebaseAppends)
	}
	if base.Version() < 2 {
		return nil, nil, notRebaseable("format version %d", base.Version())
	}
	var headMain *table.SnapshotRef
	if r, ok := maps.Collect(base.Refs())[table.MainBranch]; ok {
		headMain = &r
	}
	snap, props, err := staleSnapshot(updates, headMain)
	if err != nil {
		return nil, nil, err
	}
	appendErr := pureAppend(snap)
	rowLevel := appendErr != nil && rowLevelOperation(snap)
	if appendErr != nil && !rowLevel {
		return nil, nil, appendErr
	}
	if base.SnapshotByID(snap.SnapshotID) != nil {
		// A retry of a commit that landed (its answer lost): adding it
		// again would publish its rows twice.
		return nil, nil, notRebaseable("snapshot %d is already in the table", snap.SnapshotID)
	}
	if !sameParent(snap.ParentSnapshotID, sa.asserted) {
		return nil, nil, notRebaseable("snapshot %d is not made on the main the commit asserts", snap.SnapshotID)
	}
	for k, v := range props {
		// A property another writer set in between wins: replaying the
		// client's value over it would undo that commit.
		if cur, ok := base.Properties()[k]; ok && cur != v {
			return nil, nil, notRebaseable("property %s changed concurrently", k)
		}
	}
	if snap.SchemaID == nil || *snap.SchemaID != base.CurrentSchema().ID {
		return nil, nil, notRebaseable("snapshot %d was written with another schema than the table's current", snap.SnapshotID)
	}
	var parent *table.Snapshot
	if sa.asserted != nil {
		if parent = mainAncestor(base, *sa.asserted); parent == nil {
			return nil, nil, notRebaseable("snapshot %d is no longer an ancestor of main", *sa.asserted)
		}
	}
	if _, err := wh.Contains(snap.ManifestList); err != nil {
		return nil, nil, notRebaseable("manifest list %s is outside the warehouse", snap.ManifestList)
	}
	if rowLevel {
		return s.rebaseRowLevel(ctx, wh, base, baseLoc, snap, parent, props)
	}
	spec := base.DefaultPartitionSpec()
	// committedReads: the client's new manifest list is read whatever
	// Avro schema its writer gave it (manifestread), the head's through
	// the warehouse's cache.
	res, err := tablemerge.CherryPick(ctx, newCommittedReads(wh, base), tablemerge.Request{
		Head:         base,
		HeadLocation: baseLoc,
		Picks:        []tablemerge.Pick{{Snapshot: *snap, Parent: parent}},
		SourceRef:    table.MainBranch,
		AppendOnly:   &spec,
		// The client's manifests are new: no committed list names them.
		ReuseManifests: true,
		Now:            s.now,
	})
	if err != nil {
		if res != nil {
			s.removeFiles(ctx, res.Written...)
		}
		// Whatever stopped it (not an append after all, a manifest the
		// client never wrote, a failed write), the commit is answered as
		// if no rebase were tried: 409, and the client retries as usual.
		return nil, nil, notRebaseable("%v", err)
	}
	if len(props) > 0 {
		if err := res.Builder.SetProperties(props); err != nil {
			s.removeFiles(ctx, res.Written...)
			return nil, nil, notRebaseable("set properties: %v", err)
		}
	}
	return res.Builder, res.Written, nil
}

// staleSnapshot returns the snapshot of an update set that only adds a
// snapshot to main: one add-snapshot, main set to it (keeping the
// retention headMain, main at the head, has: engines send the retention of
// the main they loaded), and at most property settings.
func staleSnapshot(updates table.Updates, headMain *table.SnapshotRef) (*table.Snapshot, iceberg.Properties, error) {
	var (
		snap  *table.Snapshot
		ref   *int64
		props = iceberg.Properties{}
	)
	for _, u := range updates {
		raw, err := json.Marshal(u)
		if err != nil {
			return nil, nil, notRebaseable("%v", err)
		}
		switch u.Action() {
		case table.UpdateAddSnapshot:
			var v struct {
				Snapshot *table.Snapshot `json:"snapshot"`
			}
			if snap != nil || json.Unmarshal(raw, &v) != nil || v.Snapshot == nil {
				return nil, nil, notRebaseable("not a single add-snapshot")
			}
			snap = v.Snapshot
		case table.UpdateSetSnapshotRef:
			// Two decodes: SnapshotRef's own UnmarshalJSON would hide
			// ref-name if it were embedded.
			var name struct {
				Name string `json:"ref-name"`
			}
			var v table.SnapshotRef
			if ref != nil || json.Unmarshal(raw, &name) != nil || json.Unmarshal(raw, &v) != nil ||
				name.Name != table.MainBranch || v.SnapshotRefType != table.BranchRef {
				return nil, nil, notRebaseable("sets a ref other than main")
			}
			if !sameRetention(v, headMain) {
				return nil, nil, notRebaseable("changes main's retention")
			}
			ref = &v.SnapshotID
		case table.UpdateSetProperties:
			var v struct {
				Updates iceberg.Properties `json:"updates"`
			}
			if json.Unmarshal(raw, &v) != nil {
				return nil, nil, notRebaseable("set-properties")
			}
			for k, val := range v.Updates {
				props[k] = val
			}
		default:
			return nil, nil, notRebaseable("update %s", u.Action())
		}
	}
	if snap == nil || ref == nil || *ref != snap.SnapshotID {
		return nil, nil, notRebaseable("main is not moved to the added snapshot")
	}
	return snap, props, nil
}

// pureAppend reports why snap is not exactly an append (one that removes
// nothing and adds no delete file); nil when it is.
func pureAppend(snap *table.Snapshot) error {
	if snap.Summary == nil || snap.Summary.Operation != table.OpAppend {
		return notRebaseable("snapshot %d is not an append", snap.SnapshotID)
	}
	for _, k := range []string{"deleted-data-files", "deleted-records", "removed-delete-files", "added-delete-files",
		"removed-position-deletes", "removed-equality-deletes", "added-position-deletes", "added-equality-deletes"} {
		if v := snap.Summary.Properties[k]; v != "" && v != "0" {
			return notRebaseable("snapshot %d has %s=%s", snap.SnapshotID, k, v)
		}
	}
	return nil
}

// sameRetention reports whether ref keeps the retention settings of
// head (none when head is nil).
func sameRetention(ref table.SnapshotRef, head *table.SnapshotRef) bool {
	var want table.SnapshotRef
	if head != nil {
		want = *head
	}
	return equalPtr(ref.MaxRefAgeMs, want.MaxRefAgeMs) && equalPtr(ref.MaxSnapshotAgeMs, want.MaxSnapshotAgeMs) &&
		equalPtr(ref.MinSnapshotsToKeep, want.MinSnapshotsToKeep)
}

func equalPtr[T comparable](a, b *T) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func sameParent(a, b *int64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// mainAncestor returns snapshot id if main of m descends from it (or is
// it).
func mainAncestor(m table.Metadata, id int64) *table.Snapshot {
	s := m.SnapshotByName(table.MainBranch)
	for s != nil {
		if s.SnapshotID == id {
			return s
		}
		if s.ParentSnapshotID == nil {
			return nil
		}
		s = m.SnapshotByID(*s.ParentSnapshotID)
	}
	return nil
}

var errOutside = errors.New("location outside the warehouse")

// checkedFiles reads and writes only below the warehouse: the manifest
// list and the manifests a rebase reads are named by the client.
type checkedFiles struct{ wh *icebergtable.Warehouse }

func (f checkedFiles) ReadFile(ctx context.Context, loc string) ([]byte, error) {
	if _, err := f.wh.Contains(loc); err != nil {
		return nil, fmt.Errorf("%w: %s", errOutside, loc)
	}
	return f.wh.ReadFile(ctx, loc)
}

func (f checkedFiles) WriteFile(ctx context.Context, loc string, data []byte) error {
	if _, err := f.wh.Contains(loc); err != nil {
		return fmt.Errorf("%w: %s", errOutside, loc)
	}
	return f.wh.WriteFile(ctx, loc, data)
}

// errNotRebaseable says why a stale commit is answered 409 instead of
// rebased.
type errNotRebaseable struct{ reason string }

func (e *errNotRebaseable) Error() string { return "not rebased: " + e.reason }

func notRebaseable(format string, args ...any) error {
	return &errNotRebaseable{reason: fmt.Sprintf(format, args...)}
}

var _ tablemerge.Files = checkedFiles{}
var _ tablemerge.Files = (*icebergtable.Warehouse)(nil)
