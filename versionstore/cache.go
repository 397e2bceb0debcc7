package versionstore

import (
	"container/list"
	"sync"
)

// objectCache keeps decoded immutable objects. Objects never change once
// written, so entries never need invalidation, only eviction by size.
type objectCache struct {
	mu       sync.Mutex
	maxBytes int64
	bytes    int64
	lru      list.List // of *cacheEntry, most recent at front
	byHash   map[Hash]*list.Element
}

type cacheEntry struct {
	hash Hash
	val  any
	size int64
}

// entryOverhead approximates the bookkeeping cost of one entry.
const entryOverhead = 160

func newObjectCache(maxBytes int64) *objectCache {
	return &objectCache{maxBytes: maxBytes, byHash: map[Hash]*list.Element{}}
}

func (c *objectCache) get(h Hash) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byHash[h]
	if !ok {
		return nil, false
	}
	c.lru.MoveToFront(el)
	return el.Value.(*cacheEntry).val, true
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
	if el, ok := c.byHash[h]; ok {
		c.lru.MoveToFront(el)
		return
	}
	c.byHash[h] = c.lru.PushFront(&cacheEntry{hash: h, val: val, size: sz})
	c.bytes += sz
}

func (c *objectCache) evict() {
	for c.bytes > c.maxBytes {
		el := c.lru.Back()
		e := el.Value.(*cacheEntry)
		c.lru.Remove(el)
		delete(c.byHash, e.hash)
		c.bytes -= e.size
	}
}
