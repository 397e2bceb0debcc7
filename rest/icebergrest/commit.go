package icebergrest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"
	"go.opentelemetry.io/otel/trace"

	"github.com/floe-catalog/floe/catalog/icebergtable"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// commitTableRequest is the spec's CommitTableRequest. Decoding rejects
// unknown requirement types and update actions, as the spec requires.
type commitTableRequest struct {
	Identifier   *identifier        `json:"identifier"`
	Requirements table.Requirements `json:"requirements"`
	Updates      table.Updates      `json:"updates"`

	// fields holds each update's checked fields, decoded from the
	// request's own JSON; nil for a request built in code (fieldsOf).
	fields []updateFields
}

// UnmarshalJSON decodes the request: a common one in one pass
// (decodeCommonCommit), any other by the spec's decoding (decodeSpec).
func (c *commitTableRequest) UnmarshalJSON(data []byte) error {
	if req, ok := decodeCommonCommit(data); ok {
		*c = req
		return nil
	}
	return c.decodeSpec(data)
}

// specCommitTableRequest decodes as commitTableRequest does without
// trying decodeCommonCommit first: for callers that already did.
type specCommitTableRequest commitTableRequest

func (s *specCommitTableRequest) UnmarshalJSON(data []byte) error {
	return (*commitTableRequest)(s).decodeSpec(data)
}

// decodeSpec decodes the request as the spec's type, and each update's
// checked fields from the same bytes: authorization, the maintenance
// lock, shared-file and location checks all read them, and decoding them
// once here costs less than one re-encoding of the update.
func (c *commitTableRequest) decodeSpec(data []byte) error {
	type spec commitTableRequest // without the methods: the spec's decoding
	if err := json.Unmarshal(data, (*spec)(c)); err != nil {
		return err
	}
	var raw struct {
		Updates []updateFields `json:"updates"`
	}
	if json.Unmarshal(data, &raw) == nil && len(raw.Updates) == len(c.Updates) {
		c.fields = raw.Updates
	} else {
		// fieldsOf decodes each update on its own, and reports the error
		// where the check needs the field.
		c.fields = nil
	}
	return nil
}

// fieldsOf returns the checked fields of the request's i-th update.
func (c *commitTableRequest) fieldsOf(i int) (updateFields, error) {
	if c.fields != nil {
		return c.fields[i], nil
	}
	return decodeUpdate(c.Updates[i])
}

// tableChange is one table's requested change.
type tableChange struct {
	id  identifier
	req commitTableRequest
}

// staged is one table's change prepared against one head: validated,
// applied, and its new metadata file written.
type staged struct {
	id     identifier
	create bool
	base   *icebergtable.MetadataFile // nil for a create
	file   *icebergtable.MetadataFile // the new metadata file, or base for a no-op
	op     *versionstore.Operation
	desc   commitDescription
	// lists are the manifest lists written by a rebase of a stale append
	// (rebase.go), removed with file if the commit does not happen.
	lists []string
	// body is file's metadata as answered: file.ServedJSON.
	body []byte
	// added are the snapshots the new file has and base has not.
	added []table.Snapshot
}

func (a *api) updateTable(w http.ResponseWriter, r *http.Request) error {
	wr, id, err := a.entityOf(r, tableKind)
	if err != nil {
		return err
	}
	data, err := readBody(r)
	if err != nil {
		return err
	}
	// Not decodeBody: its json.Decoder reads a common request twice more.
	req, common := decodeCommonCommit(data)
	if !common {
		if err := decodeJSONBody(data, (*specCommitTableRequest)(&req)); err != nil {
			return err
		}
	}
	if req.Identifier != nil && !slices.Equal(req.Identifier.key(), id.key()) {
		return badRequest("the request body names table %s but the path names %s", *req.Identifier, id)
	}
	rp, err := a.commitTables(w, r, wr, []tableChange{{id: id, req: req}}, func(results []*staged) *reply {
		s := results[0]
		return metadataReply(s.file.Location, s.body, nil).withETag(etag(s.file.Location, "all"))
	})
	if err != nil {
		return err
	}
	rp.write(w, &a.joins)
	return nil
}

func (a *api) commitTransaction(w http.ResponseWriter, r *http.Request) error {
	wr, err := a.warehouseRefOf(r)
	if err != nil {
		return err
	}
	var req struct {
		TableChanges []commitTableRequest `json:"table-changes"`
	}
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if len(req.TableChanges) == 0 {
		return badRequest("a transaction needs at least one table change")
	}
	changes := make([]tableChange, 0, len(req.TableChanges))
	seen := map[string]bool{}
	for i, tc := range req.TableChanges {
		if tc.Identifier == nil {
			return badRequest("table change %d has no identifier", i)
		}
		id := *tc.Identifier
		if err := id.validate(); err != nil {
			return err
		}
		if seen[id.String()] {
			return badRequest("table %s appears more than once in the transaction", id)
		}
		seen[id.String()] = true
		changes = append(changes, tableChange{id: id, req: tc})
	}
	rp, err := a.commitTables(w, r, wr, changes, func([]*staged) *reply { return noContent() })
	if err != nil {
		return err
	}
	rp.write(w, &a.joins)
	return nil
}

// commitTables validates and applies every change against the branch head,
// writes the new metadata files, and makes one catalog commit with all of
// them: all tables change or none. Each attempt holds this process's locks
// of all the tables involved (tableLockKey), so writers here take turns,
// each validating against the head the previous one made. When a writer
// that takes no such lock (a merge, a rename or drop, another process
// sharing the store) changed one of the tables in between, the store
// refuses the commit; then everything is re-read, requirements are
// validated again against the new head and the updates re-applied, up to
// a.retries times. That is the spec's server-side retry: a client's change
// lands on a newer head as long as its requirements still hold. respond
// builds the reply from the prepared changes before the commit (see
// commit); that reply is returned.
func (a *api) commitTables(w http.ResponseWriter, r *http.Request, wr *warehouseRef, changes []tableChange, respond func([]*staged) *reply) (_ *reply, err error) {
	span := a.startCommitSpan(r, wr, changes)
	if span.IsRecording() {
		r = r.WithContext(trace.ContextWithSpan(r.Context(), span))
	}
	defer func() { endSpan(span, err) }()
	var contents []policy.Content
	if a.guard.Enabled() { // describing the updates costs a JSON round trip each
		contents = make([]policy.Content, len(changes))
		for i, tc := range changes {
			contents[i] = tableChangeContent(tc)
		}
	}
	branch, err := a.writeBranch(r, wr, policy.ActionWriteTable, contents...)
	if err != nil {
		return nil, err
	}
	if err := a.checkMaintenanceLocks(r, branch, changes); err != nil {
		return nil, err
	}
	ctx := r.Context()
	opName := "transaction"
	var (
		results []*staged
		rp      *reply
	)
	lockKeys := make([]string, len(changes))
	for i, tc := range changes {
		lockKeys[i] = tableLockKey(branch, tc.id)
	}
	err = a.retry(ctx, "update", func(int) (bool, error) {
		// Held from reading the head to the end of the commit, and
		// released before a retry's backoff pause.
		unlock, err := a.tables.Lock(ctx, lockKeys)
		if err != nil {
			return false, err
		}
		defer unlock()
		head, err := a.head(branch)
		if err != nil {
			return false, err
		}
		var written []string
		discard := func() { a.removeFiles(ctx, written...) }
		results = results[:0]
		var ops []versionstore.Operation
		for _, tc := range changes {
			s, err := a.prepare(ctx, wr.wh, head, tc)
			if err != nil {
				discard()
				return false, err
			}
			results = append(results, s)
			if s.op != nil {
				written = append(written, s.file.Location)
				written = append(written, s.lists...)
				ops = append(ops, *s.op)
			}
		}
		rp = respond(results)
		if len(ops) == 0 {
			return false, nil // nothing changed: no file, no commit
		}
		desc := describeTransaction(results)
		opName = desc.op
		_, err = a.commit(ctx, w, r, branch, head, ops, desc, rp)
		if err == nil {
			return false, nil
		}
		ce := conflictOf(err)
		if ce == nil {
			return false, a.commitNotDone(ctx, err, written...)
		}
		discard()
		if cf := findConflict(ce, versionstore.ConflictNamespaceAbsent, versionstore.ConflictNotANamespace); cf != nil {
			return false, noSuchNamespace(cf.Key)
		}
		return true, commitFailed("Commit failed: the table changed concurrently and the change could not be re-applied %d times: %v", a.retries, ce)
	})
	if err != nil {
		if ae, ok := errors.AsType[*apiError](err); ok && ae.typ == typeCommitFailed {
			if opName == "transaction" && len(changes) == 1 {
				// Refused before it was described: labelled with the
				// operation of the snapshot it adds, so a refused overwrite
				// counts as one, as a rebased overwrite does.
				opName = addedOperation(changes[0].req.Updates, opName)
			}
			a.metrics.refused.WithLabelValues(opName).Inc()
			a.metrics.commits.WithLabelValues(opName, outcomeConflict).Inc()
		}
		return nil, err
	}
	a.countSnapshots(results)
	return rp, nil
}

// tableLockKey names a table on a branch in api.tables, which serializes
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
// commitTables still retries on that. Content keys are unique within a
// branch, whichever warehouse names the branch.
func tableLockKey(branch string, id identifier) string {
	return branch + "\x00" + strings.Join(id.key(), "\x1f")
}

// prepare validates one change's requirements against the table at head,
// applies its updates and writes the resulting metadata file.
func (a *api) prepare(ctx context.Context, wh *warehouse, head versionstore.Hash, tc tableChange) (*staged, error) {
	id, req := tc.id, tc.req
	s := &staged{id: id}
	content, err := a.lookup(ctx, head, id.key())
	if err != nil {
		return nil, err
	}
	for _, rq := range req.Requirements {
		if rq.GetType() == "assert-create" {
			s.create = true
		}
	}
	var base table.Metadata // stays a nil interface for a create
	switch {
	case content != nil && content.Type != versionstore.IcebergTable:
		if s.create {
			return nil, tableClash(id, content.Type)
		}
		return nil, noSuchTable(id)
	case content == nil && !s.create:
		return nil, noSuchTable(id)
	case content != nil:
		if s.base, err = a.readTableMetadata(ctx, content.MetadataLocation); err != nil {
			return nil, internalError(err)
		}
		base = s.base.Metadata
	}
	var (
		stale    *staleAppend // main moved since the client read it
		staleErr error
	)
	for _, rq := range req.Requirements {
		if err := rq.Validate(base); err != nil {
			if s.create && content != nil {
				// The spec and Java's AssertTableDoesNotExist: a failed
				// requirement, so the client may refresh and retry.
				return nil, commitFailed("Requirement failed: table already exists: %s", id)
			}
			if sa, ok := staleMainRef(rq); ok && !s.create && stale == nil {
				// Maybe an append the server can rebase (rebase.go), if
				// every other requirement holds.
				stale, staleErr = sa, tableRequirementFailed(rq, base, err)
				continue
			}
			return nil, tableRequirementFailed(rq, base, err)
		}
	}
	if s.create {
		if _, err := a.requireNamespace(ctx, head, id.Namespace); err != nil {
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
		if b, s.lists, rerr = a.rebaseAppend(ctx, wh, base, content.MetadataLocation, stale, req.Updates); rerr != nil {
			if _, ok := errors.AsType[*errRebaseConflict](rerr); ok {
				// A row-level commit that really conflicts (rebaserows.go):
				// operators see why it was refused.
				a.logger.InfoContext(ctx, "stale commit conflicts", "table", id.String(), "reason", rerr)
			} else {
				a.logger.DebugContext(ctx, "stale commit not rebased", "table", id.String(), "reason", rerr)
			}
			return nil, staleErr
		}
		// The manifest lists the rebase wrote go if anything below fails.
		defer func() {
			if s.op == nil {
				a.removeFiles(ctx, s.lists...)
			}
		}()
	case s.create:
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
	if !s.create && !b.HasChanges() {
		// No file is written: the answer still shows the shared-file
		// properties the base may lack.
		s.file = s.base
		if s.body, err = s.file.ServedJSON(); err != nil {
			return nil, internalError(err)
		}
		return s, nil
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
	if s.create && next.Location() == "" {
		if err := b.SetLoc(wh.defaultLocation(id, next.TableUUID().String())); err != nil {
			return nil, err
		}
		if next, err = b.Build(); err != nil {
			return nil, illegalArgument("cannot create table %s: %v", id, err)
		}
	}
	if err := validateTableLayouts(base, next); err != nil {
		return nil, err
	}
	if s.create || next.Location() != base.Location() {
		if _, err := wh.requireInside("table location", next.Location()); err != nil {
			return nil, err
		}
	}
	// s.base is nil for a create, else the file at content.MetadataLocation.
	if s.file, err = a.writeNextTableMetadata(ctx, wh, next, s.base); err != nil {
		return nil, err
	}
	s.body = s.file.JSON // it holds the shared-file properties
	contentID := ""
	if content != nil {
		contentID = content.ID
	}
	s.op = &versionstore.Operation{Kind: versionstore.OpPut, Key: id.key(), Content: icebergtable.TableContent(contentID, s.file)}
	s.added = icebergtable.AddedSnapshots(s.base, s.file)
	s.desc = describeTableChange(id, base, s.file, s.added)
	s.desc.rebased = stale != nil
	return s, nil
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
func updateFailed(id identifier, u table.Update, err error) error {
	msg := err.Error()
	if strings.Contains(msg, "must be > than last sequence number") || errors.Is(err, table.ErrInvalidRowLineage) {
		return commitFailed("Validation failed, please retry: cannot apply %s to %s: %v", u.Action(), id, err)
	}
	return illegalArgument("cannot apply %s to %s: %v", u.Action(), id, err)
}

// snapshotOperations are the snapshot summary operations recorded as is;
// anything else a client sends is recorded as "update".
var snapshotOperations = map[string]bool{"append": true, "overwrite": true, "replace": true, "delete": true}

// describeTableChange records what a commit did to one table: the
// operation of the snapshot it added (added: the snapshots next has and
// base has not), if any, every change it carries in order (PropChanges: a
// transaction that evolves the schema and appends is both), and the table
// refs it moved.
func describeTableChange(id identifier, base table.Metadata, next *icebergtable.MetadataFile, addedSnapshots []table.Snapshot) commitDescription {
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
func describeTransaction(results []*staged) commitDescription {
	var changed []*staged
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
		names = append(names, s.id.String())
		opsByTable = append(opsByTable, s.id.String()+"="+s.desc.op)
		rebased = rebased || s.desc.rebased
	}
	props := map[string]string{
		icebergtable.PropTables:     strings.Join(names, ","),
		icebergtable.PropOperations: strings.Join(opsByTable, ","),
	}
	for _, s := range changed {
		if c := s.desc.props[icebergtable.PropChanges]; c != "" {
			props[icebergtable.PropChanges+"."+s.id.String()] = c
		}
	}
	return commitDescription{
		op:      "transaction",
		rebased: rebased,
		message: "iceberg: transaction on " + strings.Join(names, ", "),
		props:   props,
	}
}
