package bytelru

import (
	"math"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Cache maps keys to values, evicting the least recently used entries
// while the summed sizes exceed the byte budget or the entries exceed the
// entry limit. Sizes are the caller's estimate of what an entry holds,
// bookkeeping included. Invariant, under mu: bytes is the sum of the sizes
// of the entries in lru, and bytes <= maxBytes after every call returns.
type Cache[K comparable, V any] struct {
	mu       sync.Mutex
	lru      *simplelru.LRU[K, entry[V]]
	maxBytes int64
	maxEntry int64
	bytes    int64
}

type entry[V any] struct {
	val  V
	size int64
}

// Options bound a Cache.
type Options struct {
	// MaxBytes is the byte budget; zero or less caches nothing.
	MaxBytes int64
	// MaxEntries bounds the number of entries too; 0 means no bound but
	// the bytes.
	MaxEntries int
	// MaxEntryBytes is the largest entry admitted, so that one huge value
	// cannot flush everything else; 0 means MaxBytes.
	MaxEntryBytes int64
}

// New returns an empty cache.
func New[K comparable, V any](o Options) *Cache[K, V] {
	c := &Cache[K, V]{maxBytes: max(o.MaxBytes, 0), maxEntry: o.MaxEntryBytes}
	if c.maxEntry <= 0 || c.maxEntry > c.maxBytes {
		c.maxEntry = c.maxBytes
	}
	n := o.MaxEntries
	if n <= 0 {
		n = math.MaxInt
	}
	// NewLRU fails only for a size below one.
	c.lru, _ = simplelru.NewLRU(n, func(_ K, e entry[V]) { c.bytes -= e.size })
	return c
}

// Get returns the value of k and makes it the most recently used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	e, ok := c.lru.Get(k)
	c.mu.Unlock()
	return e.val, ok
}

// Add caches v under k with the given size, unless the size is above the
// largest entry admitted; it reports whether v was cached. A key already
// present keeps its value (floe caches immutable things: the same key is
// the same value) and becomes the most recently used.
func (c *Cache[K, V]) Add(k K, v V, size int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ok := c.insert(k, v, size)
	c.evict()
	return ok
}

// Remove drops k, if cached. Add never replaces a value: a cache of
// values that go stale (vended credentials) removes the stale one first.
func (c *Cache[K, V]) Remove(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(k) // the eviction callback subtracts the entry's size
}

// Item is one entry for AddAll.
type Item[K comparable, V any] struct {
	Key  K
	Val  V
	Size int64
}

// AddAll adds many entries under one lock, as Add adds each.
func (c *Cache[K, V]) AddAll(items []Item[K, V]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range items {
		c.insert(it.Key, it.Val, it.Size)
	}
	c.evict()
}

func (c *Cache[K, V]) insert(k K, v V, size int64) bool {
	if size > c.maxEntry || c.maxBytes == 0 {
		return false
	}
	if _, ok := c.lru.Get(k); ok {
		return true
	}
	c.lru.Add(k, entry[V]{val: v, size: size}) // may evict by count
	c.bytes += size
	return true
}

func (c *Cache[K, V]) evict() {
	for c.bytes > c.maxBytes {
		// The eviction callback subtracts the entry's size.
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			return
		}
	}
}

// Bytes is the summed size of the cached entries.
func (c *Cache[K, V]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Len is the number of cached entries.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
