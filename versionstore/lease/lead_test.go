package lease_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/lease"
	"github.com/floe-catalog/floe/versionstore/pgbackend"
)

// postgres is started by the first test that needs it.
var postgres pgtest.Lazy

func TestMain(m *testing.M) { os.Exit(pgtest.LazyMain(m, &postgres)) }

func sharedStores(t *testing.T, n int) []*versionstore.Store {
	t.Helper()
	c := postgres.Need(t)
	dsn, err := c.Schema(t.Context(), pgtest.SchemaName(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	var out []*versionstore.Store
	for range n {
		be, err := pgbackend.Open(t.Context(), dsn, pgbackend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		s, err := versionstore.Open(t.Context(), be, versionstore.Options{})
		if err != nil {
			t.Fatal(errors.Join(err, be.Close()))
		}
		t.Cleanup(func() { s.Close() })
		out = append(out, s)
	}
	return out
}

// TestLeadOneReplicaAtATime: three replicas over one PostgreSQL database
// each run a schedule (as floe serve runs the GC and ref-expiry
// schedules) under Lead: runs never overlap and all happen on the
// leader; when the leader stops, another replica's schedule takes over.
func TestLeadOneReplicaAtATime(t *testing.T) {
	stores := sharedStores(t, 3)
	var running atomic.Int32
	var overlap atomic.Bool
	runs := make([]atomic.Int32, len(stores))
	stops := make([]context.CancelFunc, len(stores))
	dones := make([]chan struct{}, len(stores))
	for i, s := range stores {
		ctx, stop := context.WithCancel(t.Context())
		stops[i], dones[i] = stop, make(chan struct{})
		go func() {
			defer close(dones[i])
			lease.New(s, nil).Lead(ctx, "gc", fmt.Sprintf("replica-%d", i), time.Second, nil, func(ctx context.Context) {
				// The schedule: a run every 20 ms while leading.
				for ctx.Err() == nil {
					if running.Add(1) > 1 {
						overlap.Store(true)
					}
					runs[i].Add(1)
					time.Sleep(5 * time.Millisecond)
					running.Add(-1)
					select {
					case <-ctx.Done():
					case <-time.After(20 * time.Millisecond):
					}
				}
			})
		}()
	}
	t.Cleanup(func() {
		for i := range stops {
			stops[i]()
			<-dones[i]
		}
	})
	leaderOf := func() int {
		for {
			leaders, at := 0, -1
			for i := range runs {
				if runs[i].Load() > 0 {
					leaders++
					at = i
				}
			}
			if leaders > 1 {
				t.Fatalf("runs on more than one replica without a failover: %v", counts(runs))
			}
			if at >= 0 && runs[at].Load() >= 5 {
				return at
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	leader := leaderOf()
	before := counts(runs)
	stops[leader]()
	<-dones[leader]
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		now := counts(runs)
		took := false
		for i := range now {
			if i != leader && now[i] > 0 {
				took = true
			}
		}
		if took {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica took over: runs %v", now)
		}
	}
	if overlap.Load() {
		t.Fatal("two runs at once")
	}
	if after := counts(runs); after[leader] != before[leader] && after[leader] > before[leader]+1 {
		t.Errorf("the stopped leader kept running: %v then %v", before, after)
	}
}

func counts(runs []atomic.Int32) []int32 {
	out := make([]int32, len(runs))
	for i := range runs {
		out[i] = runs[i].Load()
	}
	return out
}
