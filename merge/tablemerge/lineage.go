package tablemerge

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/iceberg-go/table"
)

// A change is what one snapshot did to a table. A cherry-picked copy
// (CherryPick) makes the same change as the snapshot it copies: it lists
// the same files, keeps the copied snapshot's id when the target does not
// have it, and names it in SummarySourceSnapshotID. So one change may sit
// in several lineages under one id, or under the copy's own id and the id
// it names. Whether a change is "already on the target" is decided here,
// for every merge path: classification (package classify), the picks of a
// merge (mergeengine), CherryPick's own guard, and the merge queue's
// lineage check (package mergecheck).

// SourceSnapshotID is the id of the snapshot s copies, if s is a
// cherry-picked copy.
func SourceSnapshotID(s table.Snapshot) (int64, bool) {
	if s.Summary == nil {
		return 0, false
	}
	v, ok := s.Summary.Properties[SummarySourceSnapshotID]
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	return id, true
}

// ChangeIDs names the change s made: its own id and, for a copy that did
// not keep it, the id of the snapshot it copies.
func ChangeIDs(s table.Snapshot) []int64 {
	ids := []int64{s.SnapshotID}
	if src, ok := SourceSnapshotID(s); ok && src != s.SnapshotID {
		ids = append(ids, src)
	}
	return ids
}

// ChangeSet is a set of changes, by the ids ChangeIDs names them with.
type ChangeSet map[int64]bool

// ChangeSetOf is the set of the changes snaps made.
func ChangeSetOf(snaps ...table.Snapshot) ChangeSet {
	c := ChangeSet{}
	for _, s := range snaps {
		c.Add(s)
	}
	return c
}

// Add records s's change.
func (c ChangeSet) Add(s table.Snapshot) {
	for _, id := range ChangeIDs(s) {
		c[id] = true
	}
}

// Holds reports whether s's change is already in c: a snapshot of c has
// s's id, or s copies one of c's, or one of c's is a copy of s.
// Publishing s where c is would publish its rows twice.
func (c ChangeSet) Holds(s table.Snapshot) bool {
	return slices.ContainsFunc(ChangeIDs(s), func(id int64) bool { return c[id] })
}

// HeadSnapshotID is the snapshot a lineage starts from: the table's main
// ref's, else its current snapshot's; nil without one.
func HeadSnapshotID(meta table.Metadata) *int64 {
	if meta == nil {
		return nil
	}
	if s := meta.SnapshotByName(table.MainBranch); s != nil {
		id := s.SnapshotID
		return &id
	}
	if s := meta.CurrentSnapshot(); s != nil {
		id := s.SnapshotID
		return &id
	}
	return nil
}

// Lineage is one table's main-ref history (a side) read against
// another's (the base, e.g. a merge's target), by changes. Since builds
// it.
type Lineage struct {
	// Met is the snapshot where the side's history meets the base's: the
	// first, walking back from the side's head, that is one of the base's
	// history (the same id and manifest list). Below it the histories are
	// one. Nil when they never meet.
	Met *int64
	// Added are the snapshots above Met whose change the base's history
	// does not hold, oldest first.
	Added []table.Snapshot
	// Held are the snapshots above Met whose change the base's history
	// holds (a copy of a base snapshot, or a base snapshot under another
	// manifest list), oldest first: the side reaches that change of the
	// base through them.
	Held []table.Snapshot
	// Twice are the snapshots above Met, Added or Held, whose change the
	// side's history already has: below Met, or in an older snapshot
	// above it. Publishing the side publishes their rows twice.
	Twice []Repeat
	// Missing are the base's snapshots above Met whose change the side's
	// history does not hold, newest first (a side forked below the base's
	// head, or rolled back past it).
	Missing []int64
	// Broken says why the walk stopped before meeting the base's history
	// or the side's root: a snapshot not in the side's metadata (expired)
	// or parents that form a cycle ("" when it did not).
	Broken string
}

// Repeat is a snapshot that makes a change again: Of names the change
// (the snapshot's own id, or the id it copies); OfBase says the change is
// one of the base's history.
type Repeat struct {
	Snapshot table.Snapshot
	Of       int64
	OfBase   bool
}

// Since walks side's main-ref history back from its head to where it
// meets base's main-ref history and sorts the snapshots on the way by
// change: those the base does not hold (Added), those it holds (Held: a
// branch that took the base's changes by a merge holds copies of them),
// and those that repeat a change (Twice); and names the base's changes
// the side lacks (Missing). A base or side without metadata has an empty
// history. Snapshots expired from the base's metadata end its history
// there: what is left is still the base's.
func Since(base, side table.Metadata) Lineage {
	// The base's main-ref history, newest first.
	physical := map[int64]string{}
	var baseChain []table.Snapshot
	if base != nil {
		// Snapshots() copies every snapshot: bound the walk once.
		limit := len(base.Snapshots())
		for id, n := HeadSnapshotID(base), 0; id != nil && n <= limit; n++ {
			s := base.SnapshotByID(*id)
			if s == nil {
				break
			}
			physical[s.SnapshotID] = s.ManifestList
			baseChain = append(baseChain, *s)
			id = s.ParentSnapshotID
		}
	}
	inBase := ChangeSetOf(baseChain...)

	var l Lineage
	var walked []table.Snapshot // newest first
	if side != nil {
		limit := len(side.Snapshots())
		for id, n := HeadSnapshotID(side), 0; id != nil; n++ {
			s := side.SnapshotByID(*id)
			if s == nil {
				l.Broken = fmt.Sprintf("snapshot %d is not in the table's metadata (expired?)", *id)
				break
			}
			if list, ok := physical[s.SnapshotID]; ok && list == s.ManifestList {
				met := s.SnapshotID
				l.Met = &met
				break
			}
			if n > limit {
				l.Broken = "the snapshots' parents form a cycle"
				break
			}
			walked = append(walked, *s)
			id = s.ParentSnapshotID
		}
	}
	slices.Reverse(walked)

	// The common history (the base's from Met down) holds its changes
	// once; every change above Met may be made once more.
	seen := ChangeSet{}
	above := true
	for _, b := range baseChain {
		if l.Met != nil && b.SnapshotID == *l.Met {
			above = false
		}
		if !above {
			seen.Add(b)
		}
	}
	for _, s := range walked {
		for _, id := range ChangeIDs(s) {
			if seen[id] {
				l.Twice = append(l.Twice, Repeat{Snapshot: s, Of: id, OfBase: inBase[id]})
				break
			}
		}
		if inBase.Holds(s) {
			l.Held = append(l.Held, s)
		} else {
			l.Added = append(l.Added, s)
		}
		seen.Add(s)
	}
	for _, b := range baseChain {
		if l.Met != nil && b.SnapshotID == *l.Met {
			break
		}
		if !seen.Holds(b) {
			l.Missing = append(l.Missing, b.SnapshotID)
		}
	}
	return l
}
