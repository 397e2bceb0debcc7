package peerbench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/benchhttp"
)

// Stats are the timings of one workload run.
type Stats = benchhttp.Stats

// UniqueName returns prefix followed by random hex, a valid reference
// name and key element, so repeated runs against one server never
// collide.
func UniqueName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return prefix + hex.EncodeToString(b[:])
}

// CreateNamespace commits namespace ns on main and returns main after it.
func CreateNamespace(ctx context.Context, c *Client, ns string) (Reference, error) {
	head, err := c.Reference(ctx, "main")
	if err != nil {
		return Reference{}, err
	}
	return c.Commit(ctx, "main", head.Hash, "peerbench: namespace "+ns, Put(Namespace(ns), ns))
}

// Commits runs n commits on main from clients concurrent clients. Each
// client puts a new Iceberg table key of its own (ns.<prefix>_<client>_<i>)
// per commit, expecting the head its previous commit returned (first
// from), so concurrent commits rely on the server rebasing disjoint keys.
// Each table's metadata location lies under warehouse (a root URL such as
// file:///srv/lake): floe accepts only locations inside its warehouse,
// Nessie any. The first error stops every client.
func Commits(ctx context.Context, c *Client, from Reference, warehouse, ns, prefix string, clients, n int) (Stats, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		lat  = make([][]time.Duration, clients)
	)
	start := time.Now()
	for w := range clients {
		wg.Go(func() {
			hash := from.Hash
			for i := 0; ; i++ {
				if next.Add(1) > int64(n) || ctx.Err() != nil {
					return
				}
				name := fmt.Sprintf("%s_%d_%d", prefix, w, i)
				t0 := time.Now()
				ref, err := c.Commit(ctx, "main", hash, "peerbench: "+name,
					Put(Table(warehouse+"/"+ns+"/"+name+"/metadata/00000.metadata.json", int64(i+1)), ns, name))
				if err != nil {
					cancel(fmt.Errorf("client %d, commit %d: %w", w, i, err))
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
				hash = ref.Hash
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := context.Cause(ctx); err != nil {
		return Stats{}, err
	}
	return benchhttp.NewStats(elapsed, slices.Concat(lat...)), nil
}

// Repeat runs op n times one after the other, timing each.
func Repeat(n int, op func() error) (Stats, error) {
	lat := make([]time.Duration, 0, n)
	start := time.Now()
	for i := range n {
		t0 := time.Now()
		if err := op(); err != nil {
			return Stats{}, fmt.Errorf("op %d: %w", i, err)
		}
		lat = append(lat, time.Since(t0))
	}
	return benchhttp.NewStats(time.Since(start), lat), nil
}

// EnsureBranches makes sure branches prefix000 .. prefix<count-1> exist,
// creating the missing ones at main's head.
func EnsureBranches(ctx context.Context, c *Client, prefix string, count int) error {
	refs, _, err := c.References(ctx)
	if err != nil {
		return err
	}
	have := make(map[string]bool, len(refs))
	for _, r := range refs {
		have[r.Name] = true
	}
	main, err := c.Reference(ctx, "main")
	if err != nil {
		return err
	}
	for i := range count {
		name := fmt.Sprintf("%s%03d", prefix, i)
		if have[name] {
			continue
		}
		if _, err := c.CreateBranch(ctx, name, main); err != nil {
			return err
		}
	}
	return nil
}
