package icebergrest

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/google/uuid"

	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// propMetadataPath is the Iceberg table property that moves metadata files
// out of <location>/metadata.
const propMetadataPath = "write.metadata.path"

// loaded is one metadata file: its bytes as stored, the JSON sent to
// clients, and its parsed form. Metadata files are immutable and their names
// unique, so a loaded file never goes stale.
type loaded struct {
	location string
	raw      []byte
	// body is raw as encoding/json re-encodes a json.RawMessage: compact,
	// with <, > and & escaped. Replies embed it verbatim (see
	// metadataReply), so it is computed once per file rather than once per
	// answer. For files floe writes, body and raw are the same slice.
	body []byte
	meta table.Metadata

	// refsBody is body with only the snapshots refs point at, for
	// snapshots=refs; computed on first use, since re-parsing a large
	// file per request costs tens of milliseconds.
	refsOnce sync.Once
	refsBody json.RawMessage
	refsErr  error
}

// refsOnly returns the metadata as snapshots=refs answers it.
func (l *loaded) refsOnly() (json.RawMessage, error) {
	l.refsOnce.Do(func() { l.refsBody, l.refsErr = refSnapshotsOnly(l) })
	return l.refsBody, l.refsErr
}

// metadataCache keeps recently used metadata files by location, so loads
// and commits of hot tables need no storage read. Eviction is FIFO, which
// is enough for a cache whose entries never go stale.
type metadataCache struct {
	mu    sync.Mutex
	max   int
	byLoc map[string]*loaded
	order []string
}

func newMetadataCache(maxEntries int) *metadataCache {
	return &metadataCache{max: maxEntries, byLoc: map[string]*loaded{}}
}

func (c *metadataCache) get(loc string) *loaded {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.byLoc[loc]
}

func (c *metadataCache) put(l *loaded) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.byLoc[l.location]; ok {
		return
	}
	if len(c.order) >= c.max {
		delete(c.byLoc, c.order[0])
		c.order = c.order[1:]
	}
	c.byLoc[l.location] = l
	c.order = append(c.order, l.location)
}

// readMetadata loads and parses the metadata file at loc.
func (a *api) readMetadata(ctx context.Context, loc string) (*loaded, error) {
	if l := a.files.get(loc); l != nil {
		return l, nil
	}
	raw, err := a.readFile(ctx, loc)
	if err != nil {
		return nil, err
	}
	l, err := parseMetadata(loc, raw)
	if err != nil {
		return nil, err
	}
	a.files.put(l)
	return l, nil
}

// readFile reads the file at loc with the IO of the request's api (see
// withAPI), for callers that have no api at hand.
func readFile(ctx context.Context, loc string) ([]byte, error) {
	return apiOf(ctx).readFile(ctx, loc)
}

// readFile reads the file at loc through its warehouse's file IO.
func (a *api) readFile(ctx context.Context, loc string) ([]byte, error) {
	fsys, done, err := a.fileIO(ctx, loc)
	if err != nil {
		return nil, fmt.Errorf("open file system for %s: %w", loc, err)
	}
	defer done()
	var raw []byte
	if rf, ok := fsys.(iceio.ReadFileIO); ok {
		raw, err = rf.ReadFile(loc)
	} else {
		var f iceio.File
		if f, err = fsys.Open(loc); err == nil {
			raw, err = io.ReadAll(f)
			err = errors.Join(err, f.Close())
		}
	}
	if err != nil {
		return nil, fmt.Errorf("read metadata file %s: %w", loc, describeStorageError(err))
	}
	return raw, nil
}

// parseMetadata parses a metadata file, gunzipping it if it is compressed
// (".gz.metadata.json" as Java writes with gzip compression).
func parseMetadata(loc string, raw []byte) (*loaded, error) {
	if len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("metadata file %s: %w", loc, err)
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return nil, fmt.Errorf("metadata file %s: %w", loc, err)
		}
	}
	meta, err := table.ParseMetadataBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("parse metadata file %s: %w", loc, err)
	}
	body, err := json.Marshal(json.RawMessage(raw))
	if err != nil {
		return nil, fmt.Errorf("metadata file %s: %w", loc, err)
	}
	if bytes.Equal(body, raw) {
		body = raw
	}
	return &loaded{location: loc, raw: raw, body: body, meta: meta}, nil
}

// writeMetadata writes meta as a new metadata file at loc and syncs it: the
// catalog commit that names the file follows, and must never point at a
// file a crash could lose.
func (a *api) writeMetadata(ctx context.Context, loc string, meta table.Metadata) (*loaded, error) {
	raw, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("encode metadata for %s: %w", loc, err)
	}
	if err := a.writeFileSynced(ctx, loc, raw); err != nil {
		return nil, err
	}
	// meta is kept as is, not re-parsed from raw (parsing was a third of a
	// commit's CPU): it is the value raw encodes, and a reader parsing raw
	// gets an equal Metadata (checked by TestConcurrentAppendsTakeTurns).
	// raw is json.Marshal output, hence already what a reply embeds.
	l := &loaded{location: loc, raw: raw, body: raw, meta: meta}
	a.files.put(l)
	return l, nil
}

// writeFileSynced writes with the IO of the request's api (see withAPI),
// for callers that have no api at hand.
func writeFileSynced(ctx context.Context, loc string, data []byte) error {
	return apiOf(ctx).writeFileSynced(ctx, loc, data)
}

// writeFileSynced creates a new file at loc with data and syncs it. A
// failed write leaves no file behind. On an object store the object
// exists once Close returns, which is when the upload completes.
func (a *api) writeFileSynced(ctx context.Context, loc string, data []byte) error {
	fsys, done, err := a.fileIO(ctx, loc)
	if err != nil {
		return fmt.Errorf("open file system for %s: %w", loc, err)
	}
	defer done()
	wfs, ok := fsys.(iceio.WriteFileIO)
	if !ok {
		return fmt.Errorf("the file system of %s is read-only", loc)
	}
	out, err := wfs.Create(loc)
	if err != nil {
		return fmt.Errorf("create metadata file %s: %w", loc, describeStorageError(err))
	}
	_, err = out.Write(data)
	if s, ok := out.(interface{ Sync() error }); ok && err == nil {
		err = s.Sync()
	}
	if err = errors.Join(err, out.Close()); err != nil {
		_ = fsys.Remove(loc)
		return fmt.Errorf("write metadata file %s: %w", loc, describeStorageError(err))
	}
	syncParentDir(loc)
	return nil
}

func trimSlash(s string) string { return strings.TrimRight(s, "/") }

// syncParentDir makes a new local file's directory entry durable.
func syncParentDir(loc string) {
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "file" {
		return
	}
	if d, err := os.Open(filepath.Dir(filepath.FromSlash(u.Path))); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}

// removeFile deletes a metadata file no commit references, best-effort: an
// orphan left behind wastes space but is never read.
func (a *api) removeFile(ctx context.Context, loc string) {
	fsys, done, err := a.fileIO(ctx, loc)
	if err == nil {
		err = fsys.Remove(loc)
		done()
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		a.logger.WarnContext(ctx, "could not delete orphan metadata file", "location", loc, "error", err)
	}
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

// newMetadataLocation names the next metadata file of a table whose current
// file is prev ("" for a new table): <metadata dir>/<NNNNN>-<uuid>.metadata.json
// with NNNNN one more than prev's, as Java's metastore catalogs do.
func (a *api) newMetadataLocation(wh *warehouse, meta table.Metadata, prev string) (string, error) {
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
	if p := meta.Properties()[propMetadataPath]; p != "" {
		dir = trimSlash(p)
	}
	loc := fmt.Sprintf("%s/%05d-%s.metadata.json", dir, version, uuid.NewString())
	return wh.requireInside("metadata location", loc)
}

// internalError marks a failure of storage the catalog relies on.
func internalError(err error) error {
	return &apiError{status: http.StatusInternalServerError, typ: typeInternalServerError, msg: err.Error(), cause: err}
}
