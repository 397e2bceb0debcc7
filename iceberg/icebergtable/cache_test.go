package icebergtable

import (
	"bytes"
	"fmt"
	"testing"
)

// file is a metadata file of n raw bytes for cache tests; its content is
// not parsed.
func file(loc string, n int) *MetadataFile {
	raw := bytes.Repeat([]byte("x"), n)
	return &MetadataFile{Location: loc, Raw: raw, JSON: raw}
}

// TestMetadataCacheStaysWithinBudget adds a few huge files among small
// ones: the cache's weight never exceeds its budget, a file heavier than
// the budget is not kept, and what stays is the most recently used.
func TestMetadataCacheStaysWithinBudget(t *testing.T) {
	const budget = 1 << 20
	c := NewMetadataCache(budget)
	for i := range 100 {
		c.add(file(fmt.Sprintf("small-%d", i), 4<<10))
		if i%10 == 0 {
			// Each is a third of the budget (twice its raw size counts).
			c.add(file(fmt.Sprintf("huge-%d", i), budget/6))
		}
		if got := c.Bytes(); got > budget {
			t.Fatalf("after %d adds the cache weighs %d bytes, over its budget of %d", i+1, got, budget)
		}
		if c.get("small-0") == nil {
			t.Fatalf("small-0 evicted after %d adds, although it was used every time", i+1)
		}
	}
	c.add(file("whole", budget))
	if c.get("whole") != nil {
		t.Error("a file heavier than the whole budget was cached")
	}
	if got := c.Bytes(); got > budget || got == 0 {
		t.Fatalf("the cache weighs %d bytes, want between 1 and %d", got, budget)
	}
	if c.get("small-99") == nil {
		t.Error("the most recently added file was evicted")
	}
	var sum int64
	for i := range 100 {
		for _, loc := range []string{fmt.Sprintf("small-%d", i), fmt.Sprintf("huge-%d", i)} {
			if f := c.get(loc); f != nil {
				sum += weight(f)
			}
		}
	}
	if sum != c.Bytes() || c.Len() == 0 {
		t.Fatalf("the cached files weigh %d, the cache counts %d (%d files)", sum, c.Bytes(), c.Len())
	}
}

// TestMetadataCacheWeight counts a distinct escaped form once more, and a
// shared one not.
func TestMetadataCacheWeight(t *testing.T) {
	shared := file("a", 1000)
	distinct := &MetadataFile{Location: "b", Raw: shared.Raw, JSON: bytes.Clone(shared.Raw)}
	if got, want := weight(shared), int64(entryOverhead+2000); got != want {
		t.Errorf("weight with JSON sharing Raw = %d, want %d", got, want)
	}
	if got, want := weight(distinct), int64(entryOverhead+3000); got != want {
		t.Errorf("weight with a distinct JSON = %d, want %d", got, want)
	}
}

func TestNilMetadataCacheCachesNothing(t *testing.T) {
	var c *MetadataCache
	c.add(file("a", 10))
	if c.get("a") != nil || c.Len() != 0 || c.Bytes() != 0 {
		t.Fatal("a nil cache holds a file")
	}
}
