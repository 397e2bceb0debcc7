package icebergtable

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// PropMetadataPath is the Iceberg table property that moves metadata files
// out of <location>/metadata.
const PropMetadataPath = "write.metadata.path"

// MetadataFile is one table metadata file: its location, its bytes as
// stored, and its parsed form. Metadata files are immutable and their
// names unique, so a MetadataFile never goes stale and may be shared;
// callers must not modify its fields.
type MetadataFile struct {
	Location string
	// Raw is the file's content (gunzipped if it was compressed).
	Raw []byte
	// JSON is Raw as encoding/json re-encodes a json.RawMessage: compact,
	// with <, > and & escaped, so an answer can embed it verbatim instead
	// of re-encoding a large file for every answer. For files floe
	// writes, JSON and Raw are the same slice.
	JSON     []byte
	Metadata table.Metadata

	// refsJSON is JSON with only the snapshots refs point at; computed on
	// first use (RefSnapshotsOnly), since re-parsing a large file per
	// call costs tens of milliseconds.
	refsOnce sync.Once
	refsJSON json.RawMessage
	refsErr  error

	// servedJSON is JSON with SharedFileProperties set, for a file that
	// lacks them (ServedJSON).
	servedOnce sync.Once
	servedJSON json.RawMessage
	servedErr  error

	// confirmed is when a load last found the file in storage (Unix
	// nanoseconds; 0: never), see LoadTableMetadata.
	confirmed atomic.Int64

	// encoded locates the items of Raw's long lists, for a file floe
	// encoded (metadataencode.go); nil otherwise.
	encoded *encodedFile
}

// ReadTableMetadata reads and parses the table metadata file at loc, from
// the cache if it holds it.
func (w *Warehouse) ReadTableMetadata(ctx context.Context, loc string) (_ *MetadataFile, err error) {
	ctx, span := w.startFileSpan(ctx, "read metadata file", loc)
	var raw []byte
	hit := false
	defer func() { endFileSpan(span, len(raw), hit, err) }()
	if f := w.cache.get(loc); f != nil {
		raw, hit = f.Raw, true
		return f, nil
	}
	raw, err = w.ReadFile(ctx, loc)
	if err != nil {
		return nil, err
	}
	f, err := parseTableMetadata(loc, raw, w.maxRead)
	if err != nil {
		return nil, err
	}
	w.cache.add(f)
	return f, nil
}

// LoadTableMetadata is ReadTableMetadata for a client's load of a table:
// a file the cache holds is first confirmed to still exist in storage, so
// that a metadata file deleted behind the catalog's back answers as
// missing (fs.ErrNotExist) instead of from memory. Engines read the files
// the metadata names next; answering from a cache what storage lost only
// moves the failure there. A local file is confirmed by a stat on every
// load; an object store's by a HEAD request at most once per
// Config.ObjectStoreRecheck, since a request per load would cost more than
// the cache saves.
func (w *Warehouse) LoadTableMetadata(ctx context.Context, loc string) (*MetadataFile, error) {
	f := w.cache.get(loc)
	if f == nil {
		return w.ReadTableMetadata(ctx, loc)
	}
	objectStore := !strings.HasPrefix(loc, "file:")
	if last := f.confirmed.Load(); objectStore && last != 0 && time.Since(time.Unix(0, last)) < w.recheck {
		return f, nil
	}
	sctx, span := w.startFileSpan(ctx, "stat metadata file", loc)
	err := w.statFile(sctx, loc)
	endFileSpan(span, 0, true, err)
	if err != nil {
		return nil, fmt.Errorf("read metadata file %s: %w", loc, describeStorageError(err))
	}
	f.confirmed.Store(time.Now().UnixNano())
	return f, nil
}

// DefaultObjectStoreRecheck is Config.ObjectStoreRecheck's default.
const DefaultObjectStoreRecheck = time.Second

// InvalidMetadataError says a metadata file is not valid Iceberg metadata.
// Its message names the file and never echoes its content (a parser's
// message quotes the bytes it stumbled on, which for a file that is no
// metadata at all would tell a client what the server can read); Cause
// keeps the parser's detail for the server's logs.
type InvalidMetadataError struct {
	Location string
	// Kind is "table" or "view".
	Kind  string
	cause error
}

func (e *InvalidMetadataError) Error() string {
	return fmt.Sprintf("metadata file %s is not valid Iceberg %s metadata", e.Location, e.Kind)
}

// Cause is the parser's error, for logs only: it may quote the file.
func (e *InvalidMetadataError) Cause() error { return e.cause }

// ParseTableMetadata parses the content of the table metadata file at loc,
// gunzipping it if it is compressed (".gz.metadata.json" as Java writes
// with gzip compression), up to DefaultMaxMetadataFileBytes.
func ParseTableMetadata(loc string, raw []byte) (*MetadataFile, error) {
	return parseTableMetadata(loc, raw, DefaultMaxMetadataFileBytes)
}

func parseTableMetadata(loc string, raw []byte, limit int64) (*MetadataFile, error) {
	raw, err := gunzipBounded(loc, raw, limit)
	if err != nil {
		return nil, err
	}
	meta, err := table.ParseMetadataBytes(raw)
	if err != nil {
		return nil, &InvalidMetadataError{Location: loc, Kind: "table", cause: err}
	}
	body, err := json.Marshal(json.RawMessage(raw))
	if err != nil {
		return nil, &InvalidMetadataError{Location: loc, Kind: "table", cause: err}
	}
	if bytes.Equal(body, raw) {
		body = raw
	}
	return &MetadataFile{Location: loc, Raw: raw, JSON: body, Metadata: meta}, nil
}

// gunzipBounded gunzips raw if it is gzip-compressed, refusing more than
// limit bytes of output: a small compressed file can expand without bound.
func gunzipBounded(loc string, raw []byte, limit int64) ([]byte, error) {
	if len(raw) <= 2 || raw[0] != 0x1f || raw[1] != 0x8b {
		return raw, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, &InvalidMetadataError{Location: loc, Kind: "gzip-compressed", cause: err}
	}
	out, err := io.ReadAll(io.LimitReader(zr, limit+1))
	if err != nil {
		return nil, &InvalidMetadataError{Location: loc, Kind: "gzip-compressed", cause: err}
	}
	if int64(len(out)) > limit {
		return nil, fmt.Errorf("metadata file %s: %w of %d bytes once uncompressed", loc, ErrTooLarge, limit)
	}
	return out, nil
}

// WriteTableMetadata writes meta as a new table metadata file at loc
// (named by NewTableMetadataLocation) and syncs it.
func (w *Warehouse) WriteTableMetadata(ctx context.Context, loc string, meta table.Metadata) (*MetadataFile, error) {
	return w.WriteTableMetadataFrom(ctx, loc, meta, nil)
}

// WriteTableMetadataFrom is WriteTableMetadata for metadata built from
// base (nil: none): snapshots base's file holds unchanged are copied from
// its bytes instead of encoded again (see encodeTableMetadata). The file
// is byte for byte the same either way.
func (w *Warehouse) WriteTableMetadataFrom(ctx context.Context, loc string, meta table.Metadata, base *MetadataFile) (*MetadataFile, error) {
	f, err := w.EncodeTableMetadataFrom(loc, meta, base)
	if err != nil {
		return nil, err
	}
	if err := w.WriteMetadataFile(ctx, f); err != nil {
		return nil, err
	}
	return f, nil
}

// EncodeTableMetadataFrom is the first half of WriteTableMetadataFrom: the
// metadata file for loc, encoded but not written. WriteMetadataFile writes
// it; until then nothing may read or name loc. The merge engine writes it
// beside the cherry-pick's files (tablemerge.WriteBehind).
func (w *Warehouse) EncodeTableMetadataFrom(loc string, meta table.Metadata, base *MetadataFile) (*MetadataFile, error) {
	var prev *encodedFile
	if base != nil {
		prev = base.encoded
	}
	raw, encoded, err := encodeTableMetadata(meta, prev, &w.encodeBuffers)
	if err != nil {
		return nil, fmt.Errorf("encode metadata for %s: %w", loc, err)
	}
	// meta is kept as is, not re-parsed from raw (parsing was a third of a
	// commit's CPU): it is the value raw encodes, and a reader parsing raw
	// gets an equal Metadata (checked by TestWrittenMetadataEqualsParsed).
	// raw is json.Marshal output, hence already what JSON holds.
	return &MetadataFile{Location: loc, Raw: raw, JSON: raw, Metadata: meta, encoded: encoded}, nil
}

// WriteMetadataFile writes f, which EncodeTableMetadataFrom made, to its
// location and keeps it in the cache.
func (w *Warehouse) WriteMetadataFile(ctx context.Context, f *MetadataFile) (err error) {
	ctx, span := w.startFileSpan(ctx, "write metadata file", f.Location)
	defer func() { endFileSpan(span, len(f.Raw), false, err) }()
	if err := w.WriteFile(ctx, f.Location, f.Raw); err != nil {
		return err
	}
	w.cache.add(f)
	return nil
}

// RefSnapshotsOnly returns JSON with only the snapshots that are the head
// of a branch or tag (the REST spec's snapshots=refs), as the reference
// server's suppressHistoricalSnapshots does: no ancestors, nothing else
// rewritten but the properties, which hold SharedFileProperties as in
// ServedJSON. It is encoded as JSON is: compact and escaped.
func (f *MetadataFile) RefSnapshotsOnly() (json.RawMessage, error) {
	f.refsOnce.Do(func() { f.refsJSON, f.refsErr = refSnapshotsOnly(f) })
	return f.refsJSON, f.refsErr
}

func refSnapshotsOnly(f *MetadataFile) (json.RawMessage, error) {
	keep := map[int64]bool{}
	for _, ref := range f.Metadata.Refs() {
		keep[ref.SnapshotID] = true
	}
	if cs := f.Metadata.CurrentSnapshot(); cs != nil {
		keep[cs.SnapshotID] = true
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(f.Raw, &doc); err != nil {
		return nil, err
	}
	var snaps []json.RawMessage
	if raw, ok := doc["snapshots"]; ok {
		if err := json.Unmarshal(raw, &snaps); err != nil {
			return nil, err
		}
	}
	kept := make([]json.RawMessage, 0, len(keep))
	for _, s := range snaps {
		var head struct {
			ID int64 `json:"snapshot-id"`
		}
		if err := json.Unmarshal(s, &head); err != nil {
			return nil, err
		}
		if keep[head.ID] {
			kept = append(kept, s)
		}
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil, err
	}
	doc["snapshots"] = b
	if !hasSharedFileProperties(PropertiesOf(f.Metadata)) {
		if err := setSharedFileProperties(doc); err != nil {
			return nil, err
		}
	}
	return json.Marshal(doc)
}

var metadataFileName = regexp.MustCompile(`^(\d+)-[0-9a-fA-F-]{36}(?:\.[a-z]+)?\.metadata\.json$`)

// metadataVersion is the sequence number in a metadata file name
// ("00042-<uuid>.metadata.json", or Hadoop's "v42.metadata.json"), or -1.
func metadataVersion(loc string) int {
	name := path.Base(loc)
	if m := metadataFileName.FindStringSubmatch(name); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return n
		}
	}
	if s, ok := strings.CutPrefix(name, "v"); ok {
		if s, ok = strings.CutSuffix(s, ".metadata.json"); ok {
			s = strings.TrimSuffix(s, ".gz")
			if n, err := strconv.Atoi(s); err == nil {
				return n
			}
		}
	}
	return -1
}

// NewTableMetadataLocation names the next metadata file of a table whose
// current file is prev ("" for a new table):
// <metadata dir>/<NNNNN>-<uuid>.metadata.json with NNNNN one more than
// prev's, as Java's metastore catalogs do. The metadata dir is
// write.metadata.path if set, else <location>/metadata; the result must lie
// inside the warehouse (the error says why not).
func (w *Warehouse) NewTableMetadataLocation(meta table.Metadata, prev string) (string, error) {
	version := 0
	if prev != "" {
		if v := metadataVersion(prev); v >= 0 {
			version = v + 1
		} else {
			// A file named some other way: count the history instead.
			for range meta.PreviousFiles() {
				version++
			}
		}
	}
	dir := trimSlash(meta.Location()) + "/metadata"
	if p := PropertiesOf(meta)[PropMetadataPath]; p != "" {
		dir = trimSlash(p)
	}
	return w.Contains(fmt.Sprintf("%s/%05d-%s.metadata.json", dir, version, uuid.NewString()))
}

func trimSlash(s string) string { return strings.TrimRight(s, "/") }
