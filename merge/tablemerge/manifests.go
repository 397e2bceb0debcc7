package tablemerge

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// Reading and writing manifests. A cherry-pick re-lists a pick's manifests
// as they are when they hold only ADDED entries. Two kinds of snapshot need
// new manifests instead (the data files are still never touched):
//
//   - a merge-append (Iceberg Java's default for appends,
//     commit.manifest-merge.enabled) writes one manifest holding its ADDED
//     entries and, as EXISTING entries, the files of earlier manifests it
//     merged away. Re-listed on another head those files would be listed
//     twice (the head lists them already) or, worse, the files the head
//     removed since would come back. The pick gets a manifest of the ADDED
//     entries only (addedOnly).
//   - a replayed overwrite or delete removes files on the target's head:
//     the head's manifests holding them are rewritten with those entries
//     DELETED and the rest EXISTING, as any Iceberg writer does.

// readRawEntries reads m's entries as its writer wrote them: no sequence
// number or first row id inherited from a manifest list, so an ADDED entry
// that inherits has neither.
func readRawEntries(ctx context.Context, files Files, m iceberg.ManifestFile) ([]iceberg.ManifestEntry, error) {
	probe := iceberg.NewManifestFile(m.Version(), m.FilePath(), m.Length(), m.PartitionSpecID(), m.SnapshotID()).
		Content(m.ManifestContent()).SequenceNum(-1, -1).Build()
	return readEntries(ctx, files, probe, false)
}

// readEntries reads m's entries as a reader of the table sees them, m as
// listed (sequence numbers and first row ids inherited from the list).
func readEntries(ctx context.Context, files Files, m iceberg.ManifestFile, discardDeleted bool) ([]iceberg.ManifestEntry, error) {
	if mr, ok := files.(manifestReader); ok {
		entries, err := mr.ReadManifestEntries(ctx, m)
		if err != nil || !discardDeleted {
			return entries, err
		}
		return slices.DeleteFunc(entries, func(e iceberg.ManifestEntry) bool { return e.Status() == iceberg.EntryStatusDELETED }), nil
	}
	data, err := files.ReadFile(ctx, m.FilePath())
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
	}
	entries, err := iceberg.ReadManifest(m, bytes.NewReader(data), discardDeleted)
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
	}
	return entries, nil
}

// entryOp is one entry of a manifest to write and the status it gets.
type entryOp struct {
	status iceberg.ManifestEntryStatus
	entry  iceberg.ManifestEntry
}

// writeManifest writes a manifest of snapshot id with entries (all of one
// content and spec specID) into the table's metadata directory and returns
// it as a manifest list lists it before its sequence number is assigned:
// ADDED entries inherit the sequence number and first row id of the list
// it is written into; EXISTING and DELETED entries keep theirs.
func writeManifest(ctx context.Context, files Files, head table.Metadata, specID int32, content iceberg.ManifestContent, id int64, ops []entryOp) (iceberg.ManifestFile, string, error) {
	spec := head.PartitionSpecByID(int(specID))
	if spec == nil {
		return nil, "", fmt.Errorf("%w: partition spec %d unknown to the target", ErrUnsupported, specID)
	}
	fv := head.Version()
	var buf bytes.Buffer
	w, err := iceberg.NewManifestWriter(fv, &buf, *spec, head.CurrentSchema(), id, iceberg.WithManifestWriterContent(content))
	if err != nil {
		return nil, "", fmt.Errorf("write manifest: %w", err)
	}
	for _, op := range ops {
		switch op.status {
		case iceberg.EntryStatusADDED:
			err = w.Add(op.entry)
		case iceberg.EntryStatusEXISTING:
			err = w.Existing(op.entry)
		default:
			err = w.Delete(op.entry)
		}
		if err != nil {
			return nil, "", fmt.Errorf("write manifest: entry %s: %w", op.entry.DataFile().FilePath(), err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, "", fmt.Errorf("write manifest: %w", err)
	}
	loc := fmt.Sprintf("%s/metadata/%s-m0.avro", strings.TrimRight(head.Location(), "/"), uuid.NewString())
	mf, err := w.ToManifestFile(loc, int64(buf.Len()))
	if err != nil {
		return nil, "", fmt.Errorf("write manifest: %w", err)
	}
	if err := files.WriteFile(ctx, loc, buf.Bytes()); err != nil {
		return nil, "", fmt.Errorf("write manifest %s: %w", loc, err)
	}
	return mf, loc, nil
}

// pinsListedSequence reports whether an ADDED entry, read raw, pins
// exactly the sequence numbers it would inherit from m, the manifest
// listing it in the snapshot that added it: the values are the same as
// inherited ones, so dropping them changes nothing the entry means.
func pinsListedSequence(m iceberg.ManifestFile, e iceberg.ManifestEntry) bool {
	seq := m.SequenceNum()
	return seq >= 0 && e.SequenceNum() == seq && (e.FileSequenceNum() == nil || *e.FileSequenceNum() == seq)
}

// inherits reports why an ADDED entry, read raw, does not take its
// sequence numbers (and v3 first row id) from the list it is listed in;
// "" when it does. An entry that pinned its own data sequence number would
// keep the source's, older than the target's deletes, and one that pinned
// a row id could collide with the target's.
func inherits(m iceberg.ManifestFile, e iceberg.ManifestEntry) string {
	switch {
	case e.SequenceNum() >= 0 || e.FileSequenceNum() != nil:
		return "sequence number"
	case m.ManifestContent() == iceberg.ManifestContentData && e.DataFile().FirstRowID() != nil:
		return "first row id"
	}
	return ""
}
