package versionstore

import "github.com/floe-catalog/floe/internal/bytelru"

// objectCache keeps decoded immutable objects, bounded by their approximate
// size in bytes (Options.CacheBytes). Objects never change once written, so
// entries never need invalidation, only eviction; one object larger than an
// eighth of the budget is not cached, so it cannot flush the others.
type objectCache struct {
	maxBytes int64
	lru      *bytelru.Cache[Hash, any]
}

// cacheEntry is an object to add, with its footprint.
type cacheEntry struct {
	hash Hash
	val  any
	size int64
}

// entryOverhead approximates the bookkeeping cost of one entry.
const entryOverhead = 160

func newObjectCache(maxBytes int64) *objectCache {
	return &objectCache{maxBytes: maxBytes, lru: bytelru.New[Hash, any](bytelru.Options{
		MaxBytes: maxBytes, MaxEntryBytes: maxBytes / 8,
	})}
}

func (c *objectCache) get(h Hash) (any, bool) { return c.lru.Get(h) }

func (c *objectCache) add(h Hash, val any, size int) {
	c.lru.Add(h, val, int64(size)+entryOverhead)
}

// addAll adds many objects under one lock; each entry's size is the
// object's own footprint, as for add.
func (c *objectCache) addAll(entries []cacheEntry) {
	items := make([]bytelru.Item[Hash, any], len(entries))
	for i, e := range entries {
		items[i] = bytelru.Item[Hash, any]{Key: e.hash, Val: e.val, Size: e.size + entryOverhead}
	}
	c.lru.AddAll(items)
}

// bytes is the summed footprint of the cached objects.
func (c *objectCache) bytes() int64 { return c.lru.Bytes() }
