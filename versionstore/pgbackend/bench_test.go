package pgbackend_test

// Benchmarks of the PostgreSQL backend beside embedded Pebble, with
// synchronous_commit=on and fsync on (pgtest's cluster):
//
//	go test -run '^$' -bench . ./versionstore/pgbackend/
//
// BenchmarkCommitThroughput is the figure: version-store commits
// of distinct new tables to one branch from 64 committers, on Pebble, on
// PostgreSQL through one replica, and through three replicas (three
// stores over one schema, committers spread across them, so the replicas
// take turns on the branch's row lock: see lockedRound). BenchmarkPgTestFsync
// runs PostgreSQL's own pg_test_fsync for the disk's limit beside it.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

func BenchmarkCommitThroughput(b *testing.B) {
	const committers = 64
	b.Run("pebble", func(b *testing.B) {
		be, err := pebblebackend.Open(b.TempDir(), pebblebackend.Options{})
		if err != nil {
			b.Fatal(err)
		}
		s, err := versionstore.Open(b.Context(), be, versionstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		commitParallel(b, []*versionstore.Store{s}, committers, false)
	})
	for _, replicas := range []int{1, 3} {
		b.Run(fmt.Sprintf("postgres-replicas=%d", replicas), func(b *testing.B) {
			commitParallel(b, openReplicas(b, replicas), committers, false)
		})
	}
	// Each replica commits to a branch of its own: what replicas add when
	// their writes do not meet on one ref row.
	b.Run("postgres-replicas=3-branches=3", func(b *testing.B) {
		commitParallel(b, openReplicas(b, 3), committers, true)
	})
}

// commitParallel has committers goroutines, spread over the stores, commit
// distinct new tables to main (or, with perStore, to a branch per store)
// until b.N commits are done.
func commitParallel(b *testing.B, stores []*versionstore.Store, committers int, perStore bool) {
	ctx := b.Context()
	res, err := commitOn(ctx, stores[0], "main", versionstore.Operation{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"ns"}, Content: &versionstore.Content{Type: versionstore.Namespace}})
	if err != nil {
		b.Fatal(err)
	}
	branch := func(int) string { return "main" }
	if perStore {
		branch = func(i int) string { return fmt.Sprintf("replica-%d", i) }
		for i := range stores {
			if _, err := stores[0].CreateRef(ctx, versionstore.CreateRefRequest{Name: branch(i), Type: versionstore.Branch, Target: res.Commit.Hash, Principal: "bench"}); err != nil {
				b.Fatal(err)
			}
		}
	}
	var (
		next   atomic.Int64
		failed atomic.Int64
		wg     sync.WaitGroup
		lat    = make([][]time.Duration, committers)
	)
	b.ResetTimer()
	for c := range committers {
		wg.Go(func() {
			s, br := stores[c%len(stores)], branch(c%len(stores))
			for i := 0; next.Add(1) <= int64(b.N); i++ {
				start := time.Now()
				if _, err := commitOn(ctx, s, br, putTable(fmt.Sprintf("c%02d-%08d", c, i))); err != nil {
					failed.Add(1)
					b.Logf("committer %d: %v", c, err)
					continue
				}
				lat[c] = append(lat[c], time.Since(start))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	reportLatency(b, all)
	var retries, batches uint64
	for _, s := range stores {
		retries += s.Stats().BackendRetries.Load()
		batches += s.Stats().Batches.Load()
	}
	if batches > 0 {
		b.ReportMetric(float64(b.N)/float64(batches), "commits/batch")
	}
	b.ReportMetric(float64(retries)/float64(b.N), "rebases/op")
	if n := failed.Load(); n > 0 {
		b.Errorf("%d of %d commits failed", n, b.N)
	}
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-us")
	b.ReportMetric(pct(0.99), "p99-us")
}

// BenchmarkResolveRef is the price of the consistency model: resolving a
// branch by name reads its head from the database on a shared backend,
// where Pebble reads the in-memory mirror.
func BenchmarkResolveRef(b *testing.B) {
	b.Run("pebble", func(b *testing.B) {
		be, err := pebblebackend.Open(b.TempDir(), pebblebackend.Options{})
		if err != nil {
			b.Fatal(err)
		}
		s, err := versionstore.Open(b.Context(), be, versionstore.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		resolve(b, s)
	})
	b.Run("postgres", func(b *testing.B) {
		resolve(b, openReplicas(b, 1)[0])
	})
}

func resolve(b *testing.B, s *versionstore.Store) {
	ctx := b.Context()
	b.ResetTimer()
	for b.Loop() {
		if _, err := s.Resolve(ctx, "main"); err != nil {
			b.Fatal(err)
		}
	}
}

var fsyncLine = regexp.MustCompile(`^\s*(\S+)\s+([0-9.]+) ops/sec`)

// BenchmarkPgTestFsync runs pg_test_fsync on the cluster's disk and reports
// the rate of one 8 kB WAL write and flush with the default method
// (fdatasync on Linux): the most commits one PostgreSQL session can make
// durable per second, which group commit across sessions multiplies.
func BenchmarkPgTestFsync(b *testing.B) {
	c := pgtest.Need(b, cluster)
	tool := filepath.Join(c.Bin(), "pg_test_fsync")
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		out, err := exec.CommandContext(ctx, tool, "-s", "2", "-f", filepath.Join(b.TempDir(), "fsync.out")).CombinedOutput()
		cancel()
		if err != nil {
			b.Skipf("pg_test_fsync: %v\n%s", err, out)
		}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			m := fsyncLine.FindStringSubmatch(sc.Text())
			if m == nil {
				continue
			}
			if v, err := strconv.ParseFloat(m[2], 64); err == nil && m[1] == "fdatasync" {
				b.ReportMetric(v, "fdatasync-ops/s")
				b.Logf("pg_test_fsync:\n%s", out)
				break
			}
		}
	}
}
