package versionstore

import (
	"math"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// objectCache keeps decoded immutable objects, bounded by their approximate
// size in bytes (Options.CacheBytes). Objects never change once written, so
// entries never need invalidation, only eviction.
//
// The recency list is golang-lru's; it counts entries, so it is given no
// count bound of its own and the cache evicts its oldest entries until the
// bytes fit. One mutex guards both, since a lookup moves an entry to the
// front.
type objectCache struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	lru      *simplelru.LRU[Hash, cachedObject]
}

// cacheEntry is an object to add, with its footprint.
type cacheEntry struct {
	hash Hash
	val  any
	size int64
}

// cachedObject is what the recency list holds: no copy of the key, since
// every lookup copies the value out.
type cachedObject struct {
	val  any
	size int64 // footprint plus entryOverhead
}

// entryOverhead approximates the bookkeeping cost of one entry.
const entryOverhead = 160

func newObjectCache(maxBytes int64) *objectCache {
	c := &objectCache{maxBytes: maxBytes}
	// NewLRU fails only for a size below one.
	c.lru, _ = simplelru.NewLRU(math.MaxInt, func(_ Hash, o cachedObject) { c.bytes -= o.size })
	return c
}

func (c *objectCache) get(h Hash) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.lru.Get(h)
	return o.val, ok
}

func (c *objectCache) add(h Hash, val any, size int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.insert(h, val, int64(size))
	c.evict()
}

// addAll adds many objects under one lock; each entry's size is the
// object's own footprint, as for add.
func (c *objectCache) addAll(entries []cacheEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		c.insert(e.hash, e.val, e.size)
	}
	c.evict()
}

func (c *objectCache) insert(h Hash, val any, size int64) {
	sz := size + entryOverhead
	if sz > c.maxBytes/8 {
		return // one huge object must not flush the cache
	}
	if _, ok := c.lru.Get(h); ok {
		return // the same hash is the same object; Get made it recent
	}
	c.lru.Add(h, cachedObject{val: val, size: sz})
	c.bytes += sz
}

func (c *objectCache) evict() {
	for c.bytes > c.maxBytes {
		// The eviction callback subtracts the entry's size.
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			return
		}
	}
}
