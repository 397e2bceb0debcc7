package changefeed

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/floe-catalog/floe/housekeeping/refretention"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/versionstore"
)

// deriver turns reference-log entries into events. What it derives from an
// entry, and in what order, depends only on the entry and on immutable
// store objects (see Cursor): never on the time it runs, on what is
// cached, or on the snapshot summaries, which only fill in details.
type deriver struct {
	store     *versionstore.Store
	summaries Summaries // nil: events carry no snapshot summaries
	logger    *slog.Logger
}

// maxFastForwardCommits bounds the commits a branch move that descends
// from the branch's head reports one by one (a merge queue landing moves
// its target over its batch's merge commits); a longer move is reported
// as the difference of the two trees, as a move that does not descend is.
const maxFastForwardCommits = 1000

// diffPage is how many keys one Diff call returns while a move is
// reported as the difference of two trees.
const diffPage = 1000

// derive returns the events of one reference-log entry, numbered.
func (d *deriver) derive(ctx context.Context, e *versionstore.RefLogEntry) ([]Event, error) {
	base := Event{Ref: e.Ref, RefType: e.RefType.String(), Principal: e.Principal, Time: e.Time}
	tag := e.RefType == versionstore.Tag
	var out []Event
	var err error
	switch e.Op {
	case versionstore.RefLogCreate:
		ev := base
		ev.Type, ev.Commit = pick(tag, TagCreated, BranchCreated), e.To.String()
		ev.Move = &RefMove{To: e.To.String()}
		out = []Event{ev}
	case versionstore.RefLogDelete:
		ev := base
		ev.Type, ev.Commit = pick(tag, TagDeleted, BranchDeleted), e.From.String()
		ev.Move = &RefMove{From: e.From.String()}
		// The retention sweep's deletions carry their reason in the
		// entry's principal, the only free text the log keeps.
		if reason, ok := refretention.ExpiryReason(e.Principal); ok {
			ev.Type, ev.Principal, ev.Move.Reason = pick(tag, TagExpired, BranchExpired), refretention.Principal, reason
		}
		out = []Event{ev}
	case versionstore.RefLogAssign:
		out, err = d.assign(ctx, base, e)
	case versionstore.RefLogCommit, versionstore.RefLogMerge, versionstore.RefLogTransplant:
		// The store writes one entry per commit it adds, each moving
		// the branch from the commit's first parent to the commit.
		var c *versionstore.Commit
		if c, err = d.store.ReadCommit(ctx, e.To); err == nil {
			out, err = d.commit(ctx, base, c, e.Op)
		}
	case versionstore.RefLogEvent:
		out, err = d.logEvent(ctx, base, e)
	default:
		// An operation this version does not know has no events; the
		// entry still advances the cursor.
	}
	if err != nil {
		return nil, fmt.Errorf("events of reference log entry %d (%s %s): %w", e.Seq, e.Op, e.Ref, err)
	}
	for i := range out {
		out[i].ID = Cursor{Seq: e.Seq, Index: uint32(i)}
	}
	return out, nil
}

func pick(tag bool, ifTag, ifBranch Type) Type {
	if tag {
		return ifTag
	}
	return ifBranch
}

// assign reports a reference moved to another commit. A branch that moved
// forward along first parents (a merge queue landing, a fast-forward)
// receives each commit in between as if committed; a branch that jumped
// receives the difference of the two trees. A tag only moves.
func (d *deriver) assign(ctx context.Context, base Event, e *versionstore.RefLogEntry) ([]Event, error) {
	ff, err := d.store.IsAncestor(ctx, e.From, e.To)
	if err != nil {
		return nil, err
	}
	ev := base
	ev.Type, ev.Commit = pick(e.RefType == versionstore.Tag, TagMoved, BranchMoved), e.To.String()
	ev.Move = &RefMove{From: e.From.String(), To: e.To.String(), FastForward: ff}
	out := []Event{ev}
	if e.RefType == versionstore.Tag {
		return out, nil
	}
	chain, err := d.firstParents(ctx, e.From, e.To)
	if err != nil {
		return nil, err
	}
	if chain != nil {
		for _, c := range chain {
			evs, err := d.commit(ctx, base, c, "")
			if err != nil {
				return nil, err
			}
			out = append(out, evs...)
		}
		return out, nil
	}
	var changes []change
	token := ""
	for {
		page, next, err := d.store.Diff(ctx, e.From, e.To, versionstore.DiffOptions{Limit: diffPage, PageToken: token})
		if err != nil {
			return nil, err
		}
		for _, de := range page {
			changes = append(changes, change{key: de.Key, before: de.From, after: de.To})
		}
		if next == "" {
			break
		}
		token = next
	}
	cev := base
	cev.Commit = e.To.String()
	return append(out, d.contentEvents(ctx, cev, changes, nil, "assign")...), nil
}

// firstParents returns the commits from just after from up to to, oldest
// first, when to reaches from by first parents in at most
// maxFastForwardCommits steps; nil otherwise.
func (d *deriver) firstParents(ctx context.Context, from, to versionstore.Hash) ([]*versionstore.Commit, error) {
	fc, err := d.store.ReadCommit(ctx, from)
	if err != nil {
		return nil, err
	}
	var chain []*versionstore.Commit
	for h := to; h != from; {
		if len(chain) == maxFastForwardCommits || h == versionstore.NoAncestor {
			return nil, nil
		}
		c, err := d.store.ReadCommit(ctx, h)
		if err != nil {
			return nil, err
		}
		if c.Seq <= fc.Seq {
			return nil, nil // passed from's generation without meeting it
		}
		chain = append(chain, c)
		h = c.Parent()
	}
	slices.Reverse(chain)
	return chain, nil
}

// change is one catalog entry's value before and after (nil: absent).
type change struct {
	key           versionstore.ContentKey
	before, after *versionstore.Content
}

// commit reports one commit new on the branch: a commit, merge or
// transplant event, then one event per entry it changed. op is the log's
// operation, "" for a commit received by a fast-forward, which is told by
// its parents.
func (d *deriver) commit(ctx context.Context, base Event, c *versionstore.Commit, op versionstore.RefLogOp) ([]Event, error) {
	keys := make([]versionstore.ContentKey, 0, len(c.Operations))
	for _, o := range c.Operations {
		keys = append(keys, o.Key)
	}
	before, err := d.store.GetContents(ctx, c.Parent(), keys)
	if err != nil {
		return nil, err
	}
	after, err := d.store.GetContents(ctx, c.Hash, keys)
	if err != nil {
		return nil, err
	}
	typ, via := CommitMade, "commit"
	switch {
	case op == versionstore.RefLogTransplant:
		typ, via = TransplantMade, "transplant"
	case op == versionstore.RefLogMerge || len(c.Parents) == 2:
		typ, via = MergeMade, "merge"
	}
	ev := base
	ev.Type, ev.Commit = typ, c.Hash.String()
	if c.Committer != "" {
		ev.Principal = c.Committer
	}
	details := &CommitDetails{
		Message:    c.Message,
		Author:     c.Author,
		Operation:  c.Properties[icebergtable.PropOperation],
		Properties: c.Properties,
	}
	for _, p := range c.Parents {
		details.Parents = append(details.Parents, p.String())
	}
	if len(c.Parents) == 2 {
		details.Source = c.Parents[1].String()
	}
	changes := make([]change, 0, len(keys))
	for _, k := range keys {
		enc := string(k.Encode())
		changes = append(changes, change{key: k, before: before[enc], after: after[enc]})
	}
	sorted := slices.Clone(keys)
	slices.SortFunc(sorted, func(a, b versionstore.ContentKey) int { return strings.Compare(string(a.Encode()), string(b.Encode())) })
	for _, k := range sorted {
		details.Keys = append(details.Keys, []string(k))
	}
	if typ != CommitMade {
		if details.Tables, err = d.mergeTables(ctx, c, typ, changes); err != nil {
			return nil, err
		}
	}
	ev.Details = details
	cev := base
	cev.Commit, cev.Principal = ev.Commit, ev.Principal
	return append([]Event{ev}, d.contentEvents(ctx, cev, changes, c.Properties, via)...), nil
}

// mergeTables says how a merge or transplant commit brought each Iceberg
// table it changed (TableMerge), from what the commit recorded
// (classify.PropClass) and, for a merge's other tables, whether the
// target had changed the table since the merge base. Everything it reads
// is immutable, so the answer never changes.
func (d *deriver) mergeTables(ctx context.Context, c *versionstore.Commit, typ Type, changes []change) ([]TableMerge, error) {
	var out []TableMerge
	var unrecorded []versionstore.ContentKey
	for _, ch := range changes {
		isTable := (ch.after != nil && ch.after.Type == versionstore.IcebergTable) ||
			(ch.after == nil && ch.before != nil && ch.before.Type == versionstore.IcebergTable)
		if !isTable {
			continue
		}
		name := ch.key.String()
		class, ok := c.Properties[classify.PropClass+name]
		if ok {
			out = append(out, TableMerge{Key: []string(ch.key), Class: class, Resolution: c.Properties[classify.PropResolution+name]})
			continue
		}
		if typ == MergeMade && len(c.Parents) == 2 {
			unrecorded = append(unrecorded, ch.key)
		}
	}
	if len(unrecorded) > 0 {
		mb, err := d.store.MergeBase(ctx, c.Parents[0], c.Parents[1])
		if err != nil {
			return nil, fmt.Errorf("merge base of %s: %w", c.Hash, err)
		}
		atBase, err := d.store.GetContents(ctx, mb, unrecorded)
		if err != nil {
			return nil, err
		}
		atTarget, err := d.store.GetContents(ctx, c.Parents[0], unrecorded)
		if err != nil {
			return nil, err
		}
		for _, k := range unrecorded {
			enc := string(k.Encode())
			b, t := atBase[enc], atTarget[enc]
			if (b == nil && t == nil) || (b != nil && t != nil && b.Equal(t)) {
				out = append(out, TableMerge{Key: []string(k), Class: string(classify.FastForward)})
			} else {
				out = append(out, TableMerge{Key: []string(k), Resolution: ResolutionMergeMode})
			}
		}
	}
	slices.SortFunc(out, func(a, b TableMerge) int { return slices.Compare(a.Key, b.Key) })
	return out, nil
}

// contentEvents reports each change that changed something, in the order
// given. A table or view deleted under one key and put under another with
// the same content id is one rename, reported where it was put.
func (d *deriver) contentEvents(ctx context.Context, base Event, changes []change, props map[string]string, via string) []Event {
	dropped := map[string]versionstore.ContentKey{} // content id -> key it left
	appeared := map[string]bool{}                   // content ids put under a new key
	for _, ch := range changes {
		switch {
		case ch.after == nil && ch.before != nil && ch.before.Type != versionstore.Namespace:
			dropped[ch.before.ID] = ch.key
		case ch.before == nil && ch.after != nil && ch.after.Type != versionstore.Namespace:
			appeared[ch.after.ID] = true
		}
	}
	ops, changesOf := tableOperations(props)
	var out []Event
	for _, ch := range changes {
		var typ Type
		var prev versionstore.ContentKey
		c := ch.after
		switch {
		case ch.after == nil && ch.before == nil:
			continue
		case ch.after == nil:
			if appeared[ch.before.ID] {
				continue // reported as the rename, where it was put
			}
			c = ch.before
			typ = kindOf(c.Type, NamespaceDropped, TableDropped, ViewDropped)
		case ch.before == nil:
			if k, ok := dropped[ch.after.ID]; ok {
				typ, prev = kindOf(c.Type, NamespaceCreated, TableRenamed, ViewRenamed), k
			} else {
				typ = kindOf(c.Type, NamespaceCreated, TableCreated, ViewCreated)
			}
		case ch.before.Equal(ch.after):
			continue // put again as it was: nothing changed
		default:
			typ = kindOf(c.Type, NamespaceUpdated, TableUpdated, ViewUpdated)
		}
		ev := base
		ev.Type = typ
		cc := &ContentChange{Key: []string(ch.key), ID: c.ID, Via: via}
		if prev != nil {
			cc.PreviousKey = []string(prev)
		}
		if c.Type != versionstore.Namespace {
			cc.Iceberg = d.iceberg(ctx, ch, ops, changesOf)
		} else if ch.after != nil {
			cc.Properties = maps.Clone(ch.after.Properties)
			if ch.before != nil {
				cc.UpdatedProperties, cc.RemovedProperties = propertyChanges(ch.before.Properties, ch.after.Properties)
			}
		}
		ev.Content = cc
		out = append(out, ev)
	}
	for i := range out {
		out[i].Content.Count = len(out)
	}
	return out
}

func ptr[T any](v T) *T { return &v }

// propertyChanges names the properties after sets anew or differently, and
// those it no longer has, each sorted.
func propertyChanges(before, after map[string]string) (updated, removed []string) {
	for k, v := range after {
		if old, ok := before[k]; !ok || old != v {
			updated = append(updated, k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			removed = append(removed, k)
		}
	}
	slices.Sort(updated)
	slices.Sort(removed)
	return updated, removed
}

func kindOf(t versionstore.ContentType, ns, table, view Type) Type {
	switch t {
	case versionstore.IcebergTable:
		return table
	case versionstore.IcebergView:
		return view
	default:
		return ns
	}
}

// iceberg describes a table's or view's change: the store's fields, what
// the commit recorded about it, and the new snapshot's summary.
func (d *deriver) iceberg(ctx context.Context, ch change, ops func(string) string, changesOf func(string) []string) *IcebergChange {
	name := ch.key.String()
	ic := &IcebergChange{Operation: ops(name), Changes: changesOf(name)}
	if ch.before != nil {
		ic.PreviousMetadataLocation, ic.PreviousSnapshotID, ic.UUID = ch.before.MetadataLocation, ch.before.SnapshotID, ch.before.UUID
	}
	if ch.after == nil {
		return ic
	}
	ic.MetadataLocation, ic.SnapshotID, ic.UUID = ch.after.MetadataLocation, ch.after.SnapshotID, ch.after.UUID
	a, b := ch.after, ch.before
	if ch.after.Type == versionstore.IcebergTable {
		if b == nil || b.SchemaID != a.SchemaID {
			ic.SchemaID = ptr(a.SchemaID)
		}
		if b == nil || b.SpecID != a.SpecID {
			ic.SpecID = ptr(a.SpecID)
		}
		if b == nil || b.SortOrderID != a.SortOrderID {
			ic.SortOrderID = ptr(a.SortOrderID)
		}
	} else if b == nil || b.VersionID != a.VersionID {
		ic.VersionID = ptr(a.VersionID)
	}
	if d.summaries == nil || ch.after.Type != versionstore.IcebergTable || ch.after.SnapshotID <= 0 ||
		(ch.before != nil && ch.before.SnapshotID == ch.after.SnapshotID) {
		return ic
	}
	sum, err := d.summaries.SnapshotSummary(ctx, ch.after.MetadataLocation, ch.after.SnapshotID)
	if err != nil {
		// Best effort by design (see Cursor): the event exists either way.
		d.logger.DebugContext(ctx, "change feed: no snapshot summary", "table", name, "metadata", ch.after.MetadataLocation, "err", err)
		return ic
	}
	ic.Summary = sum
	return ic
}

// tableOperations reads what a commit's properties (icebergtable's
// PropOperation and friends) say about each table: its operation and its
// changes, by the table's dotted name.
func tableOperations(props map[string]string) (ops func(string) string, changes func(string) []string) {
	byTable := map[string]string{}
	for _, pair := range splitList(props[icebergtable.PropOperations]) {
		if name, op, ok := strings.Cut(pair, "="); ok {
			byTable[name] = op
		}
	}
	single := props[icebergtable.PropTable]
	if single == "" {
		single = props[icebergtable.PropView]
	}
	ops = func(name string) string {
		if op, ok := byTable[name]; ok {
			return op
		}
		if name == single {
			return props[icebergtable.PropOperation]
		}
		return ""
	}
	changes = func(name string) []string {
		if c, ok := props[icebergtable.PropChanges+"."+name]; ok {
			return splitList(c)
		}
		if name == single {
			return splitList(props[icebergtable.PropChanges])
		}
		return nil
	}
	return ops, changes
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
