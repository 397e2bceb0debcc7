package bytelru

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

func TestBudgetHoldsAfterEveryAdd(t *testing.T) {
	c := New[int, string](Options{MaxBytes: 1000, MaxEntryBytes: 300})
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 10_000 {
		size := int64(rng.IntN(400))
		ok := c.Add(i, "v", size)
		if ok != (size <= 300) {
			t.Fatalf("Add of size %d admitted=%v", size, ok)
		}
		if b := c.Bytes(); b > 1000 {
			t.Fatalf("after %d adds the cache holds %d bytes, budget 1000", i+1, b)
		}
	}
}

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	c := New[string, int](Options{MaxBytes: 30})
	c.Add("a", 1, 10)
	c.Add("b", 2, 10)
	c.Add("c", 3, 10)
	if _, ok := c.Get("a"); !ok { // a is now the most recent
		t.Fatal("a missing before the budget was exceeded")
	}
	c.Add("d", 4, 10)
	if _, ok := c.Get("b"); ok {
		t.Fatal("b, the least recently used, survived an over-budget add")
	}
	for _, k := range []string{"a", "c", "d"} {
		if _, ok := c.Get(k); !ok {
			t.Fatalf("%s was evicted instead of b", k)
		}
	}
	if c.Bytes() != 30 || c.Len() != 3 {
		t.Fatalf("bytes %d, len %d; want 30 and 3", c.Bytes(), c.Len())
	}
}

func TestEntryLimit(t *testing.T) {
	c := New[int, int](Options{MaxBytes: 1 << 20, MaxEntries: 4})
	for i := range 10 {
		c.Add(i, i, 1)
	}
	if c.Len() != 4 || c.Bytes() != 4 {
		t.Fatalf("len %d, bytes %d; want 4 and 4 (the count evictions must release their bytes)", c.Len(), c.Bytes())
	}
}

func TestSameKeyKeepsFirstValue(t *testing.T) {
	c := New[string, int](Options{MaxBytes: 100})
	c.Add("k", 1, 10)
	c.Add("k", 2, 50)
	if v, _ := c.Get("k"); v != 1 || c.Bytes() != 10 {
		t.Fatalf("value %d, bytes %d; want 1 and 10", v, c.Bytes())
	}
}

func TestRemoveThenAddReplaces(t *testing.T) {
	c := New[string, int](Options{MaxBytes: 100})
	c.Add("k", 1, 10)
	c.Add("other", 9, 5)
	c.Remove("k")
	if _, ok := c.Get("k"); ok || c.Bytes() != 5 || c.Len() != 1 {
		t.Fatalf("after Remove: bytes %d, len %d; want 5 and 1, k gone", c.Bytes(), c.Len())
	}
	c.Remove("never added")
	c.Add("k", 2, 50)
	if v, _ := c.Get("k"); v != 2 || c.Bytes() != 55 {
		t.Fatalf("value %d, bytes %d; want 2 and 55", v, c.Bytes())
	}
}

func TestZeroBudgetCachesNothing(t *testing.T) {
	c := New[int, int](Options{})
	if c.Add(1, 1, 0) {
		t.Fatal("a zero budget admitted an entry")
	}
	if _, ok := c.Get(1); ok || c.Len() != 0 {
		t.Fatal("a zero budget cached an entry")
	}
}

func TestAddAll(t *testing.T) {
	c := New[int, int](Options{MaxBytes: 50})
	var items []Item[int, int]
	for i := range 10 {
		items = append(items, Item[int, int]{Key: i, Val: i, Size: 10})
	}
	c.AddAll(items)
	if c.Len() != 5 || c.Bytes() != 50 {
		t.Fatalf("len %d, bytes %d; want 5 and 50", c.Len(), c.Bytes())
	}
	if _, ok := c.Get(9); !ok {
		t.Fatal("the last item added was evicted")
	}
}

func TestConcurrentUse(t *testing.T) {
	c := New[string, int](Options{MaxBytes: 500})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				k := fmt.Sprint((g*7 + i) % 97)
				if _, ok := c.Get(k); !ok {
					c.Add(k, i, int64(1+i%20))
				}
			}
		})
	}
	wg.Wait()
	if c.Bytes() > 500 {
		t.Fatalf("holds %d bytes, budget 500", c.Bytes())
	}
}
