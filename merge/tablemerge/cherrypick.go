package tablemerge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// Summary properties a cherry-picked snapshot carries besides the source's
// own: where it came from, so the table's snapshots metadata table names
// the source of every picked snapshot.
const (
	// SummarySourceSnapshotID is the id of the snapshot that was picked.
	SummarySourceSnapshotID = "floe.merge.source-snapshot-id"
	// SummarySourceParentID is the id of the snapshot the picked one was
	// made on, when it had a parent.
	SummarySourceParentID = "floe.merge.source-parent-snapshot-id"
	// SummarySourceRef names the lineage the snapshot came from (a catalog
	// branch, or "main" for a client's commit re-parented on main).
	SummarySourceRef = "floe.merge.source-ref"
)

// Errors callers branch on. Each is wrapped with the snapshot and file
// involved.
var (
	// ErrNotAdditive: the snapshot does more than add files (it removes or
	// rewrites files or manifests), so re-listing its manifests on another
	// head would not reproduce its change.
	ErrNotAdditive = errors.New("snapshot does not only add files")
	// ErrAlreadyPublished: the snapshot, or one of its manifests, is
	// already on the target; picking it again would publish its rows twice.
	ErrAlreadyPublished = errors.New("snapshot already on the target")
	// ErrUnsupported: the table or snapshot uses something the cherry-pick
	// does not handle (format version 1, embedded manifest locations).
	ErrUnsupported = errors.New("cannot cherry-pick")
)

// Files reads and writes a table's metadata files; icebergtable.Warehouse
// implements it. Its methods must be safe for concurrent use: a
// cherry-pick writes several files at once (WriteBehind).
type Files interface {
	ReadFile(ctx context.Context, loc string) ([]byte, error)
	WriteFile(ctx context.Context, loc string, data []byte) error
}

// manifestListKeeper is implemented by Files that keep decoded manifest
// lists (icebergtable.Warehouse): a list the cherry-pick wrote and read
// back is kept as it would be read.
type manifestListKeeper interface {
	KeepManifestList(loc string, mfs []iceberg.ManifestFile)
}

// manifestReader is implemented by Files that decode manifest lists and
// manifests themselves, and keep them (icebergtable.Warehouse): a queue
// batch reads the same ones for every member it merges.
type manifestReader interface {
	ReadSnapshotManifests(ctx context.Context, snap *table.Snapshot) ([]iceberg.ManifestFile, error)
	ReadManifestEntries(ctx context.Context, mf iceberg.ManifestFile) ([]iceberg.ManifestEntry, error)
}

// Pick is one snapshot to cherry-pick and the snapshot it was made on in
// its own lineage (nil when it was the table's first).
type Pick struct {
	Snapshot table.Snapshot
	Parent   *table.Snapshot
	// Replay, when set, replays the snapshot's partition-level operation
	// on the target's head instead of re-listing its manifests (see
	// Replay): what a file conflict needs.
	Replay *Replay
}

// Request is a cherry-pick of Picks, oldest first, onto Branch of Head.
// Each pick's Parent must be the previous pick's Snapshot or, for the
// first, a snapshot of the source lineage.
type Request struct {
	Head         table.Metadata
	HeadLocation string // Head's metadata file, recorded in the metadata log
	Branch       string // the target's table branch; "" is main
	Picks        []Pick
	SourceRef    string // recorded as SummarySourceRef when not empty
	// NewSnapshotID makes an id for a pick whose own id is already taken on
	// the target. Nil uses a random positive id.
	NewSnapshotID func() int64
	// AppendOnly, when set, requires every pick to add only data files
	// written with this partition spec (a pure append in the head's spec):
	// otherwise ErrNotAdditive.
	AppendOnly *int
	// Now stamps the new snapshots; nil is time.Now.
	Now func() time.Time
	// ReuseManifests re-lists a pick's own manifests under their paths
	// instead of copying them (see CherryPick): only for manifests no
	// committed snapshot lists, as those of a client's stale append that
	// the zero-retry rebase re-parents.
	ReuseManifests bool
	// RowMerge, when set, merges by row id the data files both sides
	// rewrote, in one more snapshot after the picks (rowmerge.go).
	RowMerge *RowMerge
	// Writes, when set, writes the cherry-pick's manifest copies and lists
	// in the background, and CherryPick returns without waiting for them:
	// the caller must Wait before anything reads or names them, or removes
	// Result.Written. Nil: CherryPick waits for its own.
	Writes *WriteBehind
}

// Result is the cherry-pick's outcome: nothing of it is committed.
type Result struct {
	// Builder holds Head with the new snapshots added and Branch moved to
	// the last of them. The caller may apply further updates, then Build.
	Builder *table.MetadataBuilder
	// Snapshots are the new snapshots, in the order of the picks.
	Snapshots []table.Snapshot
	// Written are the manifest lists written: the caller removes them if it
	// does not commit the result.
	Written []string
}

// CherryPick writes, for every pick, a snapshot on top of Branch of Head
// that adds the files the pick added: a new manifest list holding the
// target's manifests followed by the pick's own (those whose
// added_snapshot_id is the pick), with the next sequence number and, for
// format v3, row ids from the table's next-row-id.
//
// A pick keeps its snapshot id unless the target already has it. Its own
// manifests are listed with their entries unchanged: their ADDED entries
// carry no data sequence number and (v3) no first row id, so they inherit
// the new snapshot's through the manifest list (the spec's sequence number
// and row id inheritance). Each is copied to a new path first (unless
// ReuseManifests): the source's manifest list already names the file with
// its own sequence number, and readers cache manifests by path (PyIceberg
// does, for its whole process), so one path under two sequence numbers
// would show a reader of both branches the wrong one. The copy is the
// same bytes, metadata only; data files are never copied. A manifest whose entries pin either is refused
// rather than rewritten, as is a pick that removes or rewrites anything
// (ErrNotAdditive). Entries keep the snapshot id the writer recorded,
// which names the source snapshot when a fresh id was needed. A
// merge-append's manifest, which also carries its parent's files as
// EXISTING entries, is replaced by a new one of its ADDED entries; a pick
// with Replay set is replayed instead (see Replay).
//
// The summary is the pick's, with totals recomputed against the new
// parent and the source named (SummarySourceSnapshotID, ...).
func CherryPick(ctx context.Context, files Files, req Request) (*Result, error) {
	if req.Writes != nil {
		return cherryPick(ctx, files, req, req.Writes)
	}
	wb := NewWriteBehind(ctx)
	res, err := cherryPick(ctx, files, req, wb)
	if werr := wb.Wait(); werr != nil && err == nil {
		err = fmt.Errorf("cherry-pick: %w", werr)
	}
	return res, err
}

func cherryPick(ctx context.Context, files Files, req Request, wb *WriteBehind) (*Result, error) {
	head := req.Head
	fv := head.Version()
	if fv < 2 {
		return nil, fmt.Errorf("%w: format version %d tables have no sequence numbers to assign", ErrUnsupported, fv)
	}
	branch := req.Branch
	if branch == "" {
		branch = table.MainBranch
	}
	now := time.Now
	if req.Now != nil {
		now = req.Now
	}
	newID := req.NewSnapshotID
	if newID == nil {
		newID = randomSnapshotID
	}
	b, err := table.MetadataBuilderFromBase(head, req.HeadLocation)
	if err != nil {
		return nil, fmt.Errorf("cherry-pick onto %s: %w", req.HeadLocation, err)
	}

	parent := head.SnapshotByName(branch)
	var parentManifests []iceberg.ManifestFile
	if parent != nil {
		if parentManifests, err = readManifestList(ctx, files, *parent); err != nil {
			return nil, err
		}
	}
	onTarget := map[string]bool{}
	for _, m := range parentManifests {
		onTarget[m.FilePath()] = true
	}
	seq := head.LastSequenceNumber()
	nextRowID := head.NextRowID()
	res := &Result{Builder: b}
	fail := func(err error) (*Result, error) { return res, err }

	// publish writes the manifest list all (mine are the manifests it
	// adds) and adds the snapshot on top of parent, moving the branch.
	publish := func(id int64, all, mine []iceberg.ManifestFile, summary *table.Summary, schemaID *int, ts, srcID int64) error {
		var parentID *int64
		if parent != nil {
			parentID = &parent.SnapshotID
		}
		listLoc := manifestListLocation(head.Location(), id)
		var buf bytes.Buffer
		w, err := newManifestListWriter(fv, &buf, id, seq, nextRowID, parentID)
		if err != nil {
			return fmt.Errorf("cherry-pick snapshot %d: %w", srcID, err)
		}
		if err := w.AddManifests(all); err != nil {
			return fmt.Errorf("cherry-pick snapshot %d: list manifests: %w", srcID, err)
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("cherry-pick snapshot %d: list manifests: %w", srcID, err)
		}
		wb.write(files, listLoc, buf.Bytes(), fmt.Sprintf("cherry-pick snapshot %d: manifest list", srcID))
		res.Written = append(res.Written, listLoc)

		snap := table.Snapshot{
			SnapshotID:       id,
			ParentSnapshotID: parentID,
			SequenceNumber:   seq,
			TimestampMs:      max(now().UnixMilli(), ts),
			ManifestList:     listLoc,
			Summary:          summary,
			SchemaID:         schemaID,
		}
		if fv >= 3 {
			first := nextRowID
			next := *w.NextRowID()
			addedRows := next - first
			snap.FirstRowID, snap.AddedRows = &first, &addedRows
			nextRowID = next
		}
		if err := b.AddSnapshot(&snap); err != nil {
			return fmt.Errorf("cherry-pick snapshot %d: %w", srcID, err)
		}
		// Moving the branch keeps its retention (max-ref-age-ms,
		// max-snapshot-age-ms, min-snapshots-to-keep), as Iceberg's own
		// writers do; SetSnapshotRef alone would reset it.
		if err := b.NewRetainingSnapshotRefUpdate(branch, id, table.BranchRef).Apply(b); err != nil {
			return fmt.Errorf("cherry-pick snapshot %d: move %s: %w", srcID, branch, err)
		}
		res.Snapshots = append(res.Snapshots, snap)
		// The list just written is what the next pick goes on top of: read
		// back, its manifests carry the sequence numbers and row ids
		// assigned here.
		if parentManifests, err = iceberg.ReadManifestList(bytes.NewReader(buf.Bytes())); err != nil {
			return fmt.Errorf("cherry-pick snapshot %d: read back manifest list: %w", srcID, err)
		}
		if k, ok := files.(manifestListKeeper); ok {
			// The next merge onto this head (the queue's next member)
			// reads this list first: it is decoded already.
			k.KeepManifestList(listLoc, parentManifests)
		}
		for _, m := range mine {
			onTarget[m.FilePath()] = true
		}
		parent = &res.Snapshots[len(res.Snapshots)-1]
		return nil
	}

	// The changes on the target: its snapshots and the sources its
	// cherry-picked copies name (a copy lists copies of its source's
	// manifests, so manifest paths alone do not tell). A pick whose
	// change is among them, by its id or the id it copies, is published
	// already.
	published := ChangeSetOf(head.Snapshots()...)
	for _, p := range req.Picks {
		src := p.Snapshot
		if published.Holds(src) {
			return fail(fmt.Errorf("%w: snapshot %d", ErrAlreadyPublished, src.SnapshotID))
		}
		published.Add(src)
		seq++
		id := src.SnapshotID
		for s, _ := b.SnapshotByID(id); s != nil; s, _ = b.SnapshotByID(id) {
			id = newID()
		}
		if src.SchemaID != nil && !hasSchema(head, *src.SchemaID) {
			return fail(fmt.Errorf("%w: snapshot %d uses schema %d, unknown to the target", ErrUnsupported, src.SnapshotID, *src.SchemaID))
		}
		var all, mine []iceberg.ManifestFile
		var summary *table.Summary
		if p.Replay != nil {
			// A replay reads the head's manifests, which may be the
			// previous picks' copies still being written.
			if err := wb.Wait(); err != nil {
				return fail(fmt.Errorf("cherry-pick: %w", err))
			}
			r, err := replayManifests(ctx, files, head, parentManifests, p, id, onTarget)
			if r != nil {
				res.Written = append(res.Written, r.written...)
			}
			if err != nil {
				return fail(err)
			}
			all, mine = r.listed, r.mine
			summary = pickedSummary(r.source, p.Parent, parent, req.SourceRef)
			summary.Properties[SummaryReplayed] = ReplayedRecord
			if p.Replay.ByFiles {
				summary.Properties[SummaryReplayed] = ReplayedFiles
			}
		} else {
			relisted, written, err := pickManifests(ctx, files, wb, head, p, id, onTarget, req.AppendOnly, !req.ReuseManifests)
			res.Written = append(res.Written, written...)
			if err != nil {
				return fail(err)
			}
			all = append(append(make([]iceberg.ManifestFile, 0, len(parentManifests)+len(relisted)), parentManifests...), relisted...)
			mine = relisted
			summary = pickedSummary(src, p.Parent, parent, req.SourceRef)
		}

		if err := publish(id, all, mine, summary, src.SchemaID, src.TimestampMs, src.SnapshotID); err != nil {
			return fail(err)
		}
	}
	if rm := req.RowMerge; rm != nil && parent != nil {
		seq++
		id := newID()
		for s, _ := b.SnapshotByID(id); s != nil; s, _ = b.SnapshotByID(id) {
			id = newID()
		}
		// The row merge reads the head's manifests too.
		if err := wb.Wait(); err != nil {
			return fail(fmt.Errorf("cherry-pick: %w", err))
		}
		all, mine, c, written, err := applyRowMerge(ctx, files, head, parentManifests, rm, id)
		res.Written = append(res.Written, written...)
		if err != nil {
			return fail(fmt.Errorf("row merge: %w", err))
		}
		if len(mine) > 0 {
			props := iceberg.Properties{SummaryReplayed: ReplayedRows}
			for _, t := range totals {
				props[t.total] = "" // recomputed from the parent's by pickedSummary
			}
			summary := c.summary(&table.Summary{Operation: table.OpDelete, Properties: props})
			summary = pickedSummary(table.Snapshot{SnapshotID: id, Summary: summary}, nil, parent, req.SourceRef)
			delete(summary.Properties, SummarySourceSnapshotID)
			if err := publish(id, all, mine, summary, parent.SchemaID, 0, id); err != nil {
				return fail(err)
			}
		}
	}
	return res, nil
}

// pickManifests returns the manifests that list what the pick added, for
// a list on the target, after checking that it only added files: every
// manifest of its parent is still listed or, merged away (a merge-append:
// Iceberg Java's default for appends), has every live file carried into
// one of the pick's own manifests as an EXISTING entry; each new manifest
// was written by the pick itself and has no DELETED entry. A manifest of
// only ADDED entries is re-listed unchanged (relist); one that also
// carries EXISTING entries is replaced by a new manifest of its ADDED
// entries, so the target's own manifests stay the only source of the
// files it has, and none is listed twice. written are the new manifests.
func pickManifests(ctx context.Context, files Files, wb *WriteBehind, head table.Metadata, p Pick, id int64, onTarget map[string]bool, appendOnly *int, copyManifests bool) (relisted []iceberg.ManifestFile, written []string, err error) {
	src := p.Snapshot
	mine, err := readManifestList(ctx, files, src)
	if err != nil {
		return nil, nil, err
	}
	listed := map[string]bool{}
	for _, m := range mine {
		listed[m.FilePath()] = true
	}
	kept := map[string]bool{}
	var dropped []iceberg.ManifestFile
	if p.Parent != nil {
		before, err := readManifestList(ctx, files, *p.Parent)
		if err != nil {
			return nil, nil, err
		}
		for _, m := range before {
			if listed[m.FilePath()] {
				kept[m.FilePath()] = true
			} else {
				dropped = append(dropped, m)
			}
		}
	}
	carried := map[string]bool{} // files the pick's manifests list as EXISTING
	type own struct {
		m     iceberg.ManifestFile
		added []iceberg.ManifestEntry
		whole bool // only ADDED entries: re-listed as it is
	}
	var owns []own
	for _, m := range mine {
		if kept[m.FilePath()] {
			continue
		}
		if m.SnapshotID() != src.SnapshotID {
			return nil, nil, fmt.Errorf("%w: snapshot %d lists manifest %s added by snapshot %d, not in its parent",
				ErrNotAdditive, src.SnapshotID, m.FilePath(), m.SnapshotID())
		}
		if m.DeletedDataFiles() != 0 {
			return nil, nil, fmt.Errorf("%w: snapshot %d wrote manifest %s with %d deleted entries",
				ErrNotAdditive, src.SnapshotID, m.FilePath(), m.DeletedDataFiles())
		}
		if onTarget[m.FilePath()] {
			return nil, nil, fmt.Errorf("%w: manifest %s of snapshot %d", ErrAlreadyPublished, m.FilePath(), src.SnapshotID)
		}
		if appendOnly != nil && (m.ManifestContent() != iceberg.ManifestContentData || int(m.PartitionSpecID()) != *appendOnly) {
			return nil, nil, fmt.Errorf("%w: manifest %s of snapshot %d is not data written with partition spec %d",
				ErrNotAdditive, m.FilePath(), src.SnapshotID, *appendOnly)
		}
		if head.PartitionSpecByID(int(m.PartitionSpecID())) == nil {
			return nil, nil, fmt.Errorf("%w: manifest %s of snapshot %d uses partition spec %d, unknown to the target",
				ErrUnsupported, m.FilePath(), src.SnapshotID, m.PartitionSpecID())
		}
		entries, err := readRawEntries(ctx, files, m)
		if err != nil {
			return nil, nil, fmt.Errorf("snapshot %d: %w", src.SnapshotID, err)
		}
		o := own{m: m, whole: true}
		for _, e := range entries {
			path := e.DataFile().FilePath()
			switch e.Status() {
			case iceberg.EntryStatusADDED:
				if why := inherits(m, e); why != "" {
					if !pinsListedSequence(m, e) {
						return nil, nil, fmt.Errorf("%w: manifest %s of snapshot %d pins the %s of %s", ErrUnsupported, m.FilePath(), src.SnapshotID, why, path)
					}
					// The writer spelled out the sequence numbers the entry
					// would inherit anyway (DuckDB does): the pick writes it
					// into a manifest of its own, inheriting the pick's.
					e = iceberg.NewManifestEntry(iceberg.EntryStatusADDED, nil, nil, nil, e.DataFile())
					if why := inherits(m, e); why != "" {
						return nil, nil, fmt.Errorf("%w: manifest %s of snapshot %d pins the %s of %s", ErrUnsupported, m.FilePath(), src.SnapshotID, why, path)
					}
					o.whole = false
				}
				o.added = append(o.added, e)
			case iceberg.EntryStatusEXISTING:
				carried[path] = true
				o.whole = false
			default:
				return nil, nil, fmt.Errorf("%w: manifest %s of snapshot %d has a %v entry for %s", ErrNotAdditive, m.FilePath(), src.SnapshotID, e.Status(), path)
			}
		}
		owns = append(owns, o)
	}
	// A parent manifest the pick no longer lists must have been merged
	// into the pick's: each of its live files carried as EXISTING.
	for _, m := range dropped {
		entries, err := readEntries(ctx, files, m, true)
		if err != nil {
			return nil, nil, fmt.Errorf("snapshot %d: %w", src.SnapshotID, err)
		}
		for _, e := range entries {
			if !carried[e.DataFile().FilePath()] {
				return nil, nil, fmt.Errorf("%w: snapshot %d no longer lists manifest %s of its parent %d, and does not carry its file %s",
					ErrNotAdditive, src.SnapshotID, m.FilePath(), p.Parent.SnapshotID, e.DataFile().FilePath())
			}
		}
	}
	for _, o := range owns {
		switch {
		case o.whole && !copyManifests:
			relisted = append(relisted, relist(o.m, o.m.FilePath(), id))
		case o.whole:
			data, err := readManifestBytes(ctx, files, o.m)
			if err != nil {
				return relisted, written, fmt.Errorf("snapshot %d: %w", src.SnapshotID, err)
			}
			loc := newManifestLocation(head.Location())
			wb.write(files, loc, data, fmt.Sprintf("snapshot %d: copy manifest %s", src.SnapshotID, o.m.FilePath()))
			written = append(written, loc)
			relisted = append(relisted, relist(o.m, loc, id))
		case len(o.added) > 0:
			ops := make([]entryOp, len(o.added))
			for i, e := range o.added {
				ops[i] = entryOp{iceberg.EntryStatusADDED, e}
			}
			mf, loc, err := writeManifest(ctx, files, head, o.m.PartitionSpecID(), o.m.ManifestContent(), id, ops)
			if err != nil {
				return relisted, written, fmt.Errorf("snapshot %d: added entries of %s: %w", src.SnapshotID, o.m.FilePath(), err)
			}
			written = append(written, loc)
			relisted = append(relisted, mf)
		}
	}
	return relisted, written, nil
}

// relist is m, at path, as a manifest added by snapshot id whose sequence
// number (and v3 first row id) the manifest list writer assigns.
func relist(m iceberg.ManifestFile, path string, id int64) iceberg.ManifestFile {
	return iceberg.NewManifestFile(m.Version(), path, m.Length(), m.PartitionSpecID(), id).
		Content(m.ManifestContent()).
		SequenceNum(-1, -1).
		AddedFiles(m.AddedDataFiles()).
		ExistingFiles(m.ExistingDataFiles()).
		DeletedFiles(m.DeletedDataFiles()).
		AddedRows(m.AddedRows()).
		ExistingRows(m.ExistingRows()).
		DeletedRows(m.DeletedRows()).
		Partitions(m.Partitions()).
		KeyMetadata(m.KeyMetadata()).
		Build()
}

// copyManifest writes the bytes of manifest m to a new path in the table's
// metadata directory and returns it.
func copyManifest(ctx context.Context, files Files, tableLoc string, m iceberg.ManifestFile) (string, error) {
	data, err := readManifestBytes(ctx, files, m)
	if err != nil {
		return "", err
	}
	loc := newManifestLocation(tableLoc)
	if err := files.WriteFile(ctx, loc, data); err != nil {
		return "", fmt.Errorf("copy manifest %s: %w", m.FilePath(), err)
	}
	return loc, nil
}

// readManifestBytes reads manifest m's file whole, checking its length
// against the list's.
func readManifestBytes(ctx context.Context, files Files, m iceberg.ManifestFile) ([]byte, error) {
	data, err := files.ReadFile(ctx, m.FilePath())
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
	}
	if int64(len(data)) != m.Length() {
		return nil, fmt.Errorf("manifest %s has %d bytes, its list says %d", m.FilePath(), len(data), m.Length())
	}
	return data, nil
}

// newManifestLocation is a new manifest's path in the table's metadata
// directory.
func newManifestLocation(tableLoc string) string {
	return fmt.Sprintf("%s/metadata/%s-m0.avro", strings.TrimRight(tableLoc, "/"), uuid.NewString())
}

func readManifestList(ctx context.Context, files Files, s table.Snapshot) ([]iceberg.ManifestFile, error) {
	if s.ManifestList == "" {
		return nil, fmt.Errorf("%w: snapshot %d has no manifest list", ErrUnsupported, s.SnapshotID)
	}
	if mr, ok := files.(manifestReader); ok {
		return mr.ReadSnapshotManifests(ctx, &s)
	}
	data, err := files.ReadFile(ctx, s.ManifestList)
	if err != nil {
		return nil, fmt.Errorf("read manifest list of snapshot %d: %w", s.SnapshotID, err)
	}
	list, err := iceberg.ReadManifestList(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("read manifest list %s of snapshot %d: %w", s.ManifestList, s.SnapshotID, err)
	}
	return list, nil
}

func newManifestListWriter(fv int, buf *bytes.Buffer, id, seq, firstRowID int64, parent *int64) (*iceberg.ManifestListWriter, error) {
	if fv >= 3 {
		return iceberg.NewManifestListWriterV3(buf, id, seq, firstRowID, parent)
	}
	return iceberg.NewManifestListWriterV2(buf, id, seq, parent)
}

// manifestListLocation follows Java's naming (snap-<id>-<attempt>-<uuid>),
// with a fresh uuid so a retried cherry-pick never overwrites a list a
// committed snapshot points at.
func manifestListLocation(tableLoc string, id int64) string {
	return fmt.Sprintf("%s/metadata/snap-%d-1-%s.avro", strings.TrimRight(tableLoc, "/"), id, uuid.NewString())
}

func hasSchema(m table.Metadata, id int) bool {
	for _, s := range m.Schemas() {
		if s.ID == id {
			return true
		}
	}
	return false
}

// totals are the summary's running totals, each paired with the added and
// removed counts that move it (as iceberg-go and Java compute them).
var totals = []struct{ total, added, removed string }{
	{"total-data-files", "added-data-files", "deleted-data-files"},
	{"total-delete-files", "added-delete-files", "removed-delete-files"},
	{"total-records", "added-records", "deleted-records"},
	{"total-files-size", "added-files-size", "removed-files-size"},
	{"total-position-deletes", "added-position-deletes", "removed-position-deletes"},
	{"total-equality-deletes", "added-equality-deletes", "removed-equality-deletes"},
}

// pickedSummary is src's summary with its totals recomputed on top of the
// new parent's and the source recorded.
func pickedSummary(src table.Snapshot, srcParent, parent *table.Snapshot, sourceRef string) *table.Summary {
	props := iceberg.Properties{}
	op := table.OpAppend
	if src.Summary != nil {
		op = src.Summary.Operation
		for k, v := range src.Summary.Properties {
			props[k] = v
		}
	}
	var prev iceberg.Properties
	if parent != nil && parent.Summary != nil {
		prev = parent.Summary.Properties
	}
	for _, t := range totals {
		_, had := props[t.total]
		delete(props, t.total)
		// A total is only known if the parent knew it (or there is no
		// parent) and the source kept one.
		if !had || (parent != nil && (prev == nil || prev[t.total] == "")) {
			continue
		}
		n := prev.GetInt64(t.total, 0) + props.GetInt64(t.added, 0) - props.GetInt64(t.removed, 0)
		if n >= 0 {
			props[t.total] = strconv.FormatInt(n, 10)
		}
	}
	props[SummarySourceSnapshotID] = strconv.FormatInt(src.SnapshotID, 10)
	if srcParent != nil {
		props[SummarySourceParentID] = strconv.FormatInt(srcParent.SnapshotID, 10)
	}
	if sourceRef != "" {
		props[SummarySourceRef] = sourceRef
	}
	return &table.Summary{Operation: op, Properties: props}
}

func randomSnapshotID() int64 {
	u := uuid.New()
	var v int64
	for _, c := range u[:8] {
		v = v<<8 | int64(c)
	}
	if v < 0 {
		v = -v
	}
	if v <= 0 {
		v = 1
	}
	return v
}
