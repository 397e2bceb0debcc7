package versionstore

import "testing"

// TestObjectCacheBoundedByBytes checks that the cache holds what fits in
// its byte budget, evicts the least recently used first, and refuses an
// object too large to share the cache with others.
func TestObjectCacheBoundedByBytes(t *testing.T) {
	t.Parallel()
	const size = 840 // with entryOverhead, 1000 bytes an entry
	c := newObjectCache(8000)
	h := func(i int) Hash { return hashOf([]byte{byte(i)}) }
	for i := range 8 {
		c.add(h(i), i, size)
	}
	if c.bytes() != 8000 {
		t.Fatalf("cache holds %d bytes, want 8000", c.bytes())
	}
	if _, ok := c.get(h(0)); !ok { // 0 is now the most recent
		t.Fatal("entry 0 missing before the cache was full")
	}
	c.addAll([]cacheEntry{{hash: h(8), val: 8, size: size}})
	if _, ok := c.get(h(1)); ok {
		t.Fatal("the least recently used entry was kept")
	}
	for _, i := range []int{0, 2, 3, 4, 5, 6, 7, 8} {
		if v, ok := c.get(h(i)); !ok || v.(int) != i {
			t.Fatalf("entry %d: %v, %v", i, v, ok)
		}
	}
	if c.bytes() > c.maxBytes {
		t.Fatalf("cache holds %d bytes, more than its %d", c.bytes(), c.maxBytes)
	}
	c.add(h(4), 4, size) // again: no double count
	if c.bytes() != 8000 {
		t.Fatalf("re-adding an entry changed the size to %d", c.bytes())
	}
	c.add(h(9), 9, 900) // more than an eighth of the budget
	if _, ok := c.get(h(9)); ok {
		t.Fatal("an object larger than an eighth of the cache was cached")
	}
}
