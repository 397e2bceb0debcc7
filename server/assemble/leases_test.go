package assemble

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pgbackend"
)

// postgres is started by the first test that needs it.
var postgres pgtest.Lazy

func TestMain(m *testing.M) { os.Exit(pgtest.LazyMain(m, &postgres)) }

// TestExpirySweepOneReplicaAtATime: three replicas over one PostgreSQL
// database each run the ref-expiry schedule as Build wires it (leased as
// "refretention"): only one sweeps; when it stops, another takes over.
func TestExpirySweepOneReplicaAtATime(t *testing.T) {
	c := postgres.Need(t)
	dsn, err := c.Schema(t.Context(), pgtest.SchemaName(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	const n = 3
	regs := make([]*prometheus.Registry, n)
	stops := make([]context.CancelFunc, n)
	dones := make([]chan struct{}, n)
	for i := range n {
		be, err := pgbackend.Open(t.Context(), dsn, pgbackend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		store, err := versionstore.Open(t.Context(), be, versionstore.Options{})
		if err != nil {
			t.Fatal(errors.Join(err, be.Close()))
		}
		t.Cleanup(func() { store.Close() })
		regs[i] = prometheus.NewRegistry()
		retention, err := newRetention(RefRetention{}, nil, store, slog.New(slog.DiscardHandler), regs[i])
		if err != nil {
			t.Fatal(err)
		}
		lead := newLeadership(store, true, time.Second, slog.New(slog.DiscardHandler))
		ctx, stop := context.WithCancel(context.Background())
		stops[i], dones[i] = stop, make(chan struct{})
		go func() {
			defer close(dones[i])
			lead.exclusive(ctx, "refretention", func(ctx context.Context) { retention.Run(ctx, 10*time.Millisecond) })
		}()
	}
	t.Cleanup(func() {
		for i := range n {
			stops[i]()
			<-dones[i]
		}
	})
	sweeps := func() []uint64 {
		out := make([]uint64, n)
		for i, reg := range regs {
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				if mf.GetName() == "floe_ref_expiry_sweep_duration_seconds" {
					out[i] = mf.GetMetric()[0].GetHistogram().GetSampleCount()
				}
			}
		}
		return out
	}
	// Wait for n sweeps on the leader; nobody else may have swept.
	leader := -1
	for deadline := time.Now().Add(time.Minute); leader < 0; time.Sleep(10 * time.Millisecond) {
		got := sweeps()
		active := 0
		for i, v := range got {
			if v > 0 {
				active++
			}
			if v >= 5 {
				leader = i
			}
		}
		if active > 1 {
			t.Fatalf("sweeps per replica %v: more than one replica swept", got)
		}
		if time.Now().After(deadline) {
			t.Fatalf("sweeps per replica %v", got)
		}
	}
	stops[leader]()
	<-dones[leader]
	stopped := sweeps()[leader]
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		got := sweeps()
		if got[leader] != stopped {
			t.Fatalf("the stopped replica swept again: %v", got)
		}
		others := 0
		for i, v := range got {
			if i != leader && v > 0 {
				others++
			}
		}
		if others > 1 {
			t.Fatalf("sweeps per replica %v: two replicas took over", got)
		}
		if others == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica took over: %v", got)
		}
	}
}
