package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// TableChange is one table's requested change: the requirements its
// current metadata must meet and the updates to apply to it, as Iceberg's
// CommitTableRequest carries them.
type TableChange struct {
	ID           Identifier
	Requirements table.Requirements
	Updates      table.Updates
	// Fields holds each update's checked fields when the caller decoded
	// them already (from the request's own JSON); nil decodes each update
	// where a check needs it.
	Fields []UpdateFields
}

// fieldsOf returns the checked fields of the change's i-th update.
func (c *TableChange) fieldsOf(i int) (UpdateFields, error) {
	if c.Fields != nil {
		return c.Fields[i], nil
	}
	return DecodeUpdate(c.Updates[i])
}

// Staged is one table's change prepared against one head: validated,
// applied, and its new metadata file written.
type Staged struct {
	ID     Identifier
	create bool
	base   *icebergtable.MetadataFile // nil for a create
	// File is the new metadata file, or the current one for a change
	// that changes nothing.
	File *icebergtable.MetadataFile
	op   *versionstore.Operation
	desc commitDescription
	// lists are the manifest lists written by a rebase of a stale append
	// (rebase.go), removed with file if the commit does not happen.
	lists []string
	// Body is File's metadata as answered: File.ServedJSON.
	Body []byte
	// Added are the snapshots the new file has and the current one has
	// not.
	Added []table.Snapshot
}

// Changed reports whether the change writes anything: a new metadata file
// and its store operation.
func (s *Staged) Changed() bool { return s.op != nil }

// CommitObserver is told what becomes of table commits, for the metrics
// of the API that asked; op is the commit's operation label (one of
// icebergtable.Operations).
type CommitObserver interface {
	// Retried: an attempt is retried after another writer changed a
	// table in between.
	Retried(op string)
	// Conflicted: the store refused a commit because a key it writes
	// changed concurrently.
	Conflicted(op string)
	// Committed: the commit landed; rebased says a stale append or
	// row-level commit in it was re-parented onto the current head.
	Committed(op string, rebased bool)
	// Refused: the commit is refused with CommitFailed.
	Refused(op string)
}

// TablesCommit asks for one atomic catalog commit of table changes on a
// branch.
type TablesCommit struct {
	// Warehouse names the warehouse the tables are in: new tables go
	// below it, and every location is checked against it.
	Warehouse string
	Branch    string
	Changes   []TableChange
	// Committer names who commits, for the commit record.
	Committer string
	// Prepared, if set, is called once per attempt with every change
	// prepared, before the store commit; a record it returns is written in
	// the commit's own batch (an API's idempotency record of its answer),
	// and is ignored when nothing changed.
	Prepared func([]*Staged) *versionstore.Record
	// Observer, if set, is told what becomes of the commit.
	Observer CommitObserver
}

// TablesCommitted is what CommitTables did.
type TablesCommitted struct {
	// Staged are the changes as prepared by the attempt that committed.
	Staged []*Staged
	// Commit is the store's result; nil when nothing changed (no file
	// written, no commit made).
	Commit *versionstore.CommitResult
	// Op, Message and Rebased describe the commit (Rebased: a stale
	// append or row-level commit in it was re-parented).
	Op, Message string
	Rebased     bool
	// Recorded says the record Prepared returned was committed.
	Recorded bool
}

// CommitTables validates and applies every change against the branch
// head, writes the new metadata files, and makes one catalog commit with
// all of them: all tables change or none. Each attempt holds this
// process's locks of all the tables involved (tableLockKey), so writers
// here take turns, each validating against the head the previous one
// made. When a writer that takes no such lock (a merge, a rename or drop,
// another process sharing the store) changed one of the tables in
// between, the store refuses the commit; then everything is re-read,
// requirements are validated again against the new head and the updates
// re-applied, up to the configured retries. That is the Iceberg spec's
// server-side retry: a client's change lands on a newer head as long as
// its requirements still hold.
func (s *Service) CommitTables(ctx context.Context, req TablesCommit) (*TablesCommitted, error) {
	obs := req.Observer
	if obs == nil {
		obs = noObserver{}
	}
	changes, branch := req.Changes, req.Branch
	wh, ok := s.Warehouse(req.Warehouse)
	if !ok {
		return nil, fmt.Errorf("catalog: no warehouse %q", req.Warehouse)
	}
	out := &TablesCommitted{Op: "transaction"}
	var results []*Staged
	lockKeys := make([]string, len(changes))
	for i, tc := range changes {
		lockKeys[i] = tableLockKey(branch, tc.ID)
	}
	err := s.Retry(ctx, "update", obs, func(int) (bool, error) {
		// Held from reading the head to the end of the commit, and
		// released before a retry's backoff pause.
		unlock, err := s.tables.Lock(ctx, lockKeys)
		if err != nil {
			return false, err
		}
		defer unlock()
		head, err := s.head(branch)
		if err != nil {
			return false, err
		}
		var written []string
		discard := func() { s.removeFiles(ctx, written...) }
		results = results[:0]
		var ops []versionstore.Operation
		for _, tc := range changes {
			st, err := s.prepare(ctx, wh, head, tc)
			if err != nil {
				discard()
				return false, err
			}
			results = append(results, st)
			if st.op != nil {
				written = append(written, st.File.Location)
				written = append(written, st.lists...)
				ops = append(ops, *st.op)
			}
		}
		var record *versionstore.Record
		if req.Prepared != nil {
			record = req.Prepared(results)
		}
		if len(ops) == 0 {
			return false, nil // nothing changed: no file, no commit
		}
		desc := describeTransaction(results)
		out.Op = desc.op
		res, err := s.commit(ctx, branch, head, ops, desc, req.Committer, record, obs)
		if err == nil {
			out.Commit, out.Message, out.Rebased, out.Recorded = res, desc.message, desc.rebased, record != nil
			return false, nil
		}
		ce := ConflictOf(err)
		if ce == nil {
			return false, s.commitNotDone(ctx, err, written...)
		}
		discard()
		if cf := FindConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace); cf != nil {
			return false, noSuchNamespace(cf.Key)
		}
		return true, commitFailed("Commit failed: the table changed concurrently and the change could not be re-applied %d times: %v", s.retries, ce)
	})
	if err != nil {
		if ce, ok := errors.AsType[*Error](err); ok && ce.Kind == CommitFailed {
			if out.Op == "transaction" && len(changes) == 1 {
				// Refused before it was described: labelled with the
				// operation of the snapshot it adds, so a refused overwrite
				// counts as one, as a rebased overwrite does.
				out.Op = addedOperation(changes[0].Updates, out.Op)
			}
			obs.Refused(out.Op)
		}
		return nil, err
	}
	out.Staged = results
	return out, nil
}

// noObserver observes nothing.
type noObserver struct{}

func (noObserver) Retried(string)         {}
func (noObserver) Conflicted(string)      {}
func (noObserver) Committed(string, bool) {}
func (noObserver) Refused(string)         {}

// tableLockKey names a table on a branch in Service.tables, which serializes
// table commits per (branch, table) within the process. Without it,
// concurrent writers to one hot table each validate, write and sync a
// metadata file before the store refuses all but one; the losers delete
// their files, back off and retry, and the unlucky ones retry for seconds.
// Holding a table's lock from reading the head to the end of the store
// commit lets the next writer see the new head at once: its requirements
// then fail fast (409, no file written) or it commits on its first try.
//
// The lock is an optimization, not what keeps commits correct: the store
// still refuses a commit whose tables moved under it (a merge, a rename or
// drop, which take no lock, or another process sharing the store), and
// CommitTables still retries on that. Content keys are unique within a
// branch, whichever warehouse names the branch.
func tableLockKey(branch string, id Identifier) string {
	return branch + "\x00" + strings.Join(id.Key(), "\x1f")
}

// prepare validates one change's requirements against the table at head,
// applies its updates and writes the resulting metadata file.
func (s *Service) prepare(ctx context.Context, wh *icebergtable.Warehouse, head versionstore.Hash, tc TableChange) (*Staged, error) {
	id, req := tc.ID, tc
	st := &Staged{ID: id}
	content, err := s.lookup(ctx, head, id.Key())
	if err != nil {
		return nil, err
	}
	for _, rq := range req.Requirements {
		if rq.GetType() == "assert-create" {
			st.create = true
		}
	}
	var base table.Metadata // stays a nil interface for a create
	switch {
	case content != nil && content.Type != versionstore.IcebergTable:
		if st.create {
			return nil, tableKind.clash(id, content.Type)
		}
		return nil, noSuchTable(id)
	case content == nil && !st.create:
		return nil, noSuchTable(id)
	case content != nil:
		if st.base, err = s.readTableMetadata(ctx, content.MetadataLocation); err != nil {
			return nil, internalError(err)
		}
		base = st.base.Metadata
	}
	var (
		stale    *staleAppend // main moved since the client read it
		staleErr error
	)
	for _, rq := range req.Requirements {
		if err := rq.Validate(base); err != nil {
			if st.create && content != nil {
				// The spec and Java's AssertTableDoesNotExist: a failed
				// requirement, so the client may refresh and retry.
				return nil, commitFailed("Requirement failed: table already exists: %s", id)
			}
			if sa, ok := staleMainRef(rq); ok && !st.create && stale == nil {
				// Maybe an append the server can rebase (rebase.go), if
				// every other requirement holds.
				stale, staleErr = sa, tableRequirementFailed(rq, base, err)
				continue
			}
			return nil, tableRequirementFailed(rq, base, err)
		}
	}
	if st.create {
		if _, err := s.requireNamespace(ctx, head, id.Namespace); err != nil {
			return nil, err
		}
	}

	if err := validateTableUpdates(&req); err != nil {
		return nil, err
	}
	if err := checkSharedFileUpdates(id, &req); err != nil {
		return nil, err
	}
	var b *table.MetadataBuilder
	switch {
	case stale != nil:
		var rerr error
		if b, st.lists, rerr = s.rebaseAppend(ctx, wh, base, content.MetadataLocation, stale, req.Updates); rerr != nil {
			if _, ok := errors.AsType[*errRebaseConflict](rerr); ok {
				// A row-level commit that really conflicts (rebaserows.go):
				// operators see why it was refused.
				s.logger.InfoContext(ctx, "stale commit conflicts", "table", id.String(), "reason", rerr)
			} else {
				s.logger.DebugContext(ctx, "stale commit not rebased", "table", id.String(), "reason", rerr)
			}
			return nil, staleErr
		}
		// The manifest lists the rebase wrote go if anything below fails.
		defer func() {
			if st.op == nil {
				s.removeFiles(ctx, st.lists...)
			}
		}()
	case st.create:
		b, err = table.NewMetadataBuilder(initialFormatVersion(req.Updates))
	default:
		b, err = table.MetadataBuilderFromBase(base, content.MetadataLocation)
	}
	if err != nil {
		return nil, illegalArgument("cannot update table %s: %v", id, err)
	}
	for _, u := range req.Updates {
		if stale != nil {
			break // rebaseAppend applied them, re-parented
		}
		if err := u.Apply(b); err != nil {
			return nil, updateFailed(id, u, err)
		}
	}
	if !st.create && !b.HasChanges() {
		// No file is written: the answer still shows the shared-file
		// properties the base may lack.
		st.File = st.base
		if st.Body, err = st.File.ServedJSON(); err != nil {
			return nil, internalError(err)
		}
		return st, nil
	}
	// Every metadata file floe writes carries the shared-file properties,
	// so a table created before floe set them gets them on its next commit
	// (checkSharedFileUpdates refused anything turning them on).
	if err := b.SetProperties(icebergtable.SharedFileProperties()); err != nil {
		return nil, illegalArgument("cannot update table %s: %v", id, err)
	}
	next, err := b.Build()
	if err != nil {
		return nil, illegalArgument("cannot update table %s: %v", id, err)
	}
	if st.create && next.Location() == "" {
		if err := b.SetLoc(wh.DefaultTableLocation(id.Namespace, id.Name, next.TableUUID().String())); err != nil {
			return nil, err
		}
		if next, err = b.Build(); err != nil {
			return nil, illegalArgument("cannot create table %s: %v", id, err)
		}
	}
	if err := ValidateTableLayouts(base, next); err != nil {
		return nil, err
	}
	if st.create || next.Location() != base.Location() {
		if _, err := requireInside(wh, "table location", next.Location()); err != nil {
			return nil, err
		}
	}
	// st.base is nil for a create, else the file at content.MetadataLocation.
	if st.File, err = s.writeNextTableMetadata(ctx, wh, next, st.base); err != nil {
		return nil, err
	}
	st.Body = st.File.JSON // it holds the shared-file properties
	contentID := ""
	if content != nil {
		contentID = content.ID
	}
	st.op = &versionstore.Operation{Kind: versionstore.OpPut, Key: id.Key(), Content: icebergtable.TableContent(contentID, st.File)}
	st.Added = icebergtable.AddedSnapshots(st.base, st.File)
	st.desc = describeTableChange(id, base, st.File, st.Added)
	st.desc.rebased = stale != nil
	return st, nil
}

// initialFormatVersion is the format version a create-by-commit starts
// from: the one its upgrade-format-version update asks for, else the
// default. Starting there makes that update a no-op instead of an upgrade
// from an older version.
func initialFormatVersion(updates table.Updates) int {
	v := table.DefaultFormatVersion
	for _, u := range updates {
		if u.Action() != table.UpdateUpgradeFormatVersion {
			continue
		}
		b, err := json.Marshal(u)
		if err != nil {
			continue
		}
		var fv struct {
			FormatVersion int `json:"format-version"`
		}
		if json.Unmarshal(b, &fv) == nil && fv.FormatVersion > 0 {
			v = fv.FormatVersion
		}
	}
	return v
}

// updateFailed classifies an update that the metadata builder refused. A
// stale sequence number or first-row-id means the client built its
// snapshot on an older head: it may retry (409). Anything else is a bad
// update (400).
func updateFailed(id Identifier, u table.Update, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "must be > than last sequence number") || errors.Is(err, table.ErrInvalidRowLineage) {
		return commitFailed("Validation failed, please retry: cannot apply %s to %s: %v", u.Action(), id, err)
	}
	return illegalArgument("cannot apply %s to %s: %v", u.Action(), id, err)
}

// snapshotOperations are the snapshot summary operations recorded as is;
// anything else a client sends is recorded as "update".
var snapshotOperations = map[string]bool{"append": true, "overwrite": true, "replace": true, "delete": true}

// RecordedOperation reports whether op, a snapshot summary's operation,
// is one commits record as is (anything else is recorded as "update").
func RecordedOperation(op string) bool { return snapshotOperations[op] }

// describeTableChange records what a commit did to one table: the
// operation of the snapshot it added (added: the snapshots next has and
// base has not), if any, every change it carries in order (PropChanges: a
// transaction that evolves the schema and appends is both), and the table
// refs it moved.
func describeTableChange(id Identifier, base table.Metadata, next *icebergtable.MetadataFile, addedSnapshots []table.Snapshot) commitDescription {
	desc := commitDescription{op: "update", props: map[string]string{icebergtable.PropTable: id.String(), icebergtable.PropMetadataLocation: next.Location}}
	if base == nil {
		desc.op = "create"
		desc.message = "iceberg: create table " + id.String()
		return desc
	}
	baseView, nextView := icebergtable.ViewOf(base), icebergtable.ViewOf(next.Metadata)
	changes := metadataChanges(base, next.Metadata, baseView, nextView)
	var added *table.Snapshot
	for _, s := range addedSnapshots {
		added = &s
		op := "update"
		if s.Summary != nil && snapshotOperations[string(s.Summary.Operation)] {
			op = string(s.Summary.Operation)
		}
		changes = append(changes, op)
	}
	if added != nil {
		desc.props[icebergtable.PropSnapshotID] = strconv.FormatInt(added.SnapshotID, 10)
		if added.Summary != nil && snapshotOperations[string(added.Summary.Operation)] {
			desc.op = string(added.Summary.Operation)
		}
	}
	baseRefs, nextRefs := baseView.Refs, nextView.Refs
	var moved []string
	for name, ref := range nextRefs {
		if old, ok := baseRefs[name]; !ok || !old.Equals(ref) {
			moved = append(moved, name)
		}
	}
	for name := range baseRefs {
		if _, ok := nextRefs[name]; !ok {
			moved = append(moved, name)
		}
	}
	slices.Sort(moved)
	if len(moved) > 0 {
		desc.props[icebergtable.PropTableRef] = strings.Join(moved, ",")
		if added == nil {
			changes = append(changes, "table-refs")
		}
	}
	if len(changes) > 0 {
		desc.props[icebergtable.PropChanges] = strings.Join(changes, ",")
	}
	switch desc.op {
	case "append":
		desc.message = "iceberg: append to " + id.String()
	case "overwrite":
		desc.message = "iceberg: overwrite " + id.String()
	case "replace":
		desc.message = "iceberg: replace files of " + id.String()
	case "delete":
		desc.message = "iceberg: delete from " + id.String()
	default:
		desc.message = "iceberg: update " + id.String()
	}
	if len(changes) > 1 || (len(changes) == 1 && changes[0] != desc.op) {
		desc.message += " (" + strings.Join(changes, ", ") + ")"
	}
	if len(moved) > 0 && !slices.Equal(moved, []string{table.MainBranch}) {
		desc.message += fmt.Sprintf(" (table refs %s)", strings.Join(moved, ", "))
	}
	return desc
}

// metadataChanges names the changes next makes to base's metadata other
// than snapshots and refs, in a fixed order: schema, partition spec, sort
// order, format version, location, properties, statistics. The views are
// base's and next's (icebergtable.ViewOf).
func metadataChanges(base, next table.Metadata, baseView, nextView icebergtable.MetadataView) []string {
	var out []string
	if baseView.CurrentSchemaID != nextView.CurrentSchemaID || len(baseView.Schemas) != len(nextView.Schemas) {
		out = append(out, "schema-change")
	}
	if base.DefaultPartitionSpec() != next.DefaultPartitionSpec() || len(baseView.Specs) != len(nextView.Specs) {
		out = append(out, "partition-spec-change")
	}
	if base.DefaultSortOrder() != next.DefaultSortOrder() || len(baseView.SortOrders) != len(nextView.SortOrders) {
		out = append(out, "sort-order-change")
	}
	if base.Version() != next.Version() {
		out = append(out, "format-version-upgrade")
	}
	if base.Location() != next.Location() {
		out = append(out, "set-location")
	}
	if !maps.Equal(baseView.Properties, nextView.Properties) {
		out = append(out, "properties")
	}
	if !sameStatistics(baseView, nextView) {
		out = append(out, "statistics")
	}
	return out
}

// sameStatistics says whether two tables name the same statistics files,
// table and partition statistics both; a file's path names its content.
func sameStatistics(a, b icebergtable.MetadataView) bool {
	return slices.EqualFunc(a.Statistics, b.Statistics, func(x, y table.StatisticsFile) bool { return x.StatisticsPath == y.StatisticsPath }) &&
		slices.EqualFunc(a.PartitionStatistics, b.PartitionStatistics, func(x, y table.PartitionStatisticsFile) bool { return x.StatisticsPath == y.StatisticsPath })
}

// describeTransaction records a commit of one or more tables: a single
// table's change as is, several as one "transaction" naming each.
func describeTransaction(results []*Staged) commitDescription {
	var changed []*Staged
	for _, s := range results {
		if s.op != nil {
			changed = append(changed, s)
		}
	}
	if len(changed) == 1 && len(results) == 1 {
		return changed[0].desc
	}
	names := make([]string, 0, len(changed))
	opsByTable := make([]string, 0, len(changed))
	rebased := false
	for _, s := range changed {
		names = append(names, s.ID.String())
		opsByTable = append(opsByTable, s.ID.String()+"="+s.desc.op)
		rebased = rebased || s.desc.rebased
	}
	props := map[string]string{
		icebergtable.PropTables:     strings.Join(names, ","),
		icebergtable.PropOperations: strings.Join(opsByTable, ","),
	}
	for _, s := range changed {
		if c := s.desc.props[icebergtable.PropChanges]; c != "" {
			props[icebergtable.PropChanges+"."+s.ID.String()] = c
		}
	}
	return commitDescription{
		op:      "transaction",
		rebased: rebased,
		message: "iceberg: transaction on " + strings.Join(names, ", "),
		props:   props,
	}
}
