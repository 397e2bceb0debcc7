package icebergtable

import "github.com/floe-catalog/floe/internal/bytelru"

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
type MetadataCache struct {
	lru *bytelru.Cache[string, *MetadataFile]
}

// NewMetadataCache returns a cache holding at most maxBytes (approximately;
// see MetadataCache). A maxBytes of zero or less caches nothing.
func NewMetadataCache(maxBytes int64) *MetadataCache {
	return &MetadataCache{lru: bytelru.New[string, *MetadataFile](bytelru.Options{MaxBytes: maxBytes})}
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
	f, _ := c.lru.Get(loc)
	return f
}

func (c *MetadataCache) add(f *MetadataFile) {
	if c == nil {
		return
	}
	c.lru.Add(f.Location, f, weight(f))
}

// Bytes is the summed weight of the cached files, never above the budget.
func (c *MetadataCache) Bytes() int64 {
	if c == nil {
		return 0
	}
	return c.lru.Bytes()
}

// Len is the number of cached files.
func (c *MetadataCache) Len() int {
	if c == nil {
		return 0
	}
	return c.lru.Len()
}
