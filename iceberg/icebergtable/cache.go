package icebergtable

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/apache/iceberg-go"

	"github.com/floe-catalog/floe/internal/bytelru"
)

// DefaultMetadataCacheBytes is the budget of a MetadataCache when its
// owner configures none: enough for the hot tables of a busy catalog (a
// few hundred files of a few hundred KiB), small beside the store's own
// caches.
const DefaultMetadataCacheBytes = 64 << 20

// entryOverhead is what an entry is taken to cost beyond its bytes: the
// map and list entries and the parsed form's fixed parts. It keeps a flood
// of tiny files from growing the cache without bound.
const entryOverhead = 1 << 10

// MetadataCache keeps recently used table metadata files by location, so
// loads and commits of hot tables need no storage read. Files never go
// stale (they are immutable and their names unique), so the only question
// is what to evict: the least recently used, until the entries' weights
// fit the byte budget. An entry's weight approximates the memory it holds:
// its raw bytes, its escaped JSON when that is a different slice, as much
// again for the parsed form, and entryOverhead. (The snapshots=refs form,
// made on demand, is not counted; it is smaller than the file.) A file
// heavier than the whole budget is not cached at all. A nil *MetadataCache
// caches nothing.
//
// The same budget holds decoded manifest lists and manifests, which are
// just as immutable: the merge layer reads the same ones over and over
// (classifying each request of a queue batch reads the target's recent
// snapshots again, and validating its candidate reads them once more), and
// decoding Avro was most of a merge's CPU (issue 13).
type MetadataCache struct {
	lru *bytelru.Cache[string, any]
}

// NewMetadataCache returns a cache holding at most maxBytes (approximately;
// see MetadataCache). A maxBytes of zero or less caches nothing.
func NewMetadataCache(maxBytes int64) *MetadataCache {
	return &MetadataCache{lru: bytelru.New[string, any](bytelru.Options{MaxBytes: maxBytes})}
}

// Keys of the decoded manifest files, apart from metadata files (whose
// key is their location).
const (
	manifestListKey = "manifest-list:"
	manifestKey     = "manifest:"
)

// Approximate memory of decoded manifest files: a manifest list's entry
// is a small struct with partition summaries; a manifest entry holds a
// data file with its column statistics maps, several times its Avro size.
const (
	manifestFileWeight  = 512
	manifestEntryWeight = 2 << 10
)

func (c *MetadataCache) manifestList(loc string) ([]iceberg.ManifestFile, bool) {
	if c == nil {
		return nil, false
	}
	v, ok := c.lru.Get(manifestListKey + loc)
	mfs, isList := v.([]iceberg.ManifestFile)
	// A copy: callers may append to or reorder what they are given.
	return slices.Clone(mfs), ok && isList
}

func (c *MetadataCache) addManifestList(loc string, mfs []iceberg.ManifestFile) {
	if c == nil {
		return
	}
	c.lru.Add(manifestListKey+loc, slices.Clone(mfs), int64(entryOverhead+manifestFileWeight*len(mfs)))
}

// entriesKey keys a manifest's decoded entries: its location and what its
// entries inherit from the manifest list that lists it (snapshot id,
// sequence number, spec, content, first row id). The same file listed by
// another list, such as a source branch's manifest a cherry-pick lists
// under a new sequence number, decodes to other entries.
func entriesKey(mf iceberg.ManifestFile) string {
	first := "-"
	if id := mf.FirstRowID(); id != nil {
		first = strconv.FormatInt(*id, 10)
	}
	return fmt.Sprintf("%s%d/%d/%d/%d/%s/%s", manifestKey, mf.SnapshotID(), mf.SequenceNum(), mf.PartitionSpecID(), mf.ManifestContent(), first, mf.FilePath())
}

func (c *MetadataCache) manifest(mf iceberg.ManifestFile) ([]iceberg.ManifestEntry, bool) {
	if c == nil {
		return nil, false
	}
	v, ok := c.lru.Get(entriesKey(mf))
	entries, isManifest := v.([]iceberg.ManifestEntry)
	return slices.Clone(entries), ok && isManifest
}

func (c *MetadataCache) addManifest(mf iceberg.ManifestFile, entries []iceberg.ManifestEntry) {
	if c == nil {
		return
	}
	w := max(int64(manifestEntryWeight*len(entries)), 8*mf.Length())
	c.lru.Add(entriesKey(mf), slices.Clone(entries), entryOverhead+w)
}

// weight is the approximate memory f holds.
func weight(f *MetadataFile) int64 {
	w := int64(entryOverhead + 2*len(f.Raw))
	if len(f.JSON) > 0 && (len(f.Raw) == 0 || &f.JSON[0] != &f.Raw[0]) {
		w += int64(len(f.JSON))
	}
	return w
}

func (c *MetadataCache) get(loc string) *MetadataFile {
	if c == nil {
		return nil
	}
	v, _ := c.lru.Get(loc)
	f, _ := v.(*MetadataFile)
	return f
}

func (c *MetadataCache) add(f *MetadataFile) {
	if c == nil {
		return
	}
	c.lru.Add(f.Location, f, weight(f))
}

// Bytes is the summed weight of the cached files (metadata files and
// decoded manifests), never above the budget.
func (c *MetadataCache) Bytes() int64 {
	if c == nil {
		return 0
	}
	return c.lru.Bytes()
}

// Len is the number of cached files, of every kind.
func (c *MetadataCache) Len() int {
	if c == nil {
		return 0
	}
	return c.lru.Len()
}
