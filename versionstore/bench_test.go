package versionstore_test

// Benchmarks for the targets the store is held to, on the real disk with
// synced commits (the production configuration):
//
//	ref resolve by name             <= 300 ns/op
//	list 256 refs                   <= 15 µs/op
//	commits to one branch           >= 1,500 commits/s with 1 committer,
//	                                >= 15,000 commits/s with 64
//	commit latency at 1M keys       within 3x of the latency at 10 keys
//	diff, 10 keys apart, 1M keys    < 1 ms
//	merge of 100 keys into 1M keys  < 10 ms
//	store over 1M keys              < 300 MB RSS
//
// BenchmarkDiskFsync measures the disk itself, for comparison.
//
// The 1M-key catalog takes a while to load, so it is built once per test
// process and shared; the RSS check runs in a child process (this test
// binary re-executed) so that the benchmark process's heap does not count.
// Write benchmarks also report how the time splits between the store and
// the backend (apply-us/batch: time in Backend.Apply, mostly the WAL fsync;
// store-us/op: the rest, i.e. the store's own work), how many commits one
// synced batch carried, and the object bytes each commit wrote, so that a
// slow disk can be told from a slow store. `make bench` runs everything and
// tabulates the results.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/backend"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// The shape of the large catalog: 1,000 namespaces of 1,000 tables, loaded
// in commits of 10,000 puts.
const (
	bigNamespaces  = 1000
	bigTablesPerNS = 1000
	loadBatch      = 10_000
)

// TestMain removes the shared catalogs, which outlive any one benchmark.
// Should the package need its own TestMain, fold this cleanup into it.
func TestMain(m *testing.M) {
	code := m.Run()
	bigCatalog.remove()
	refCatalog.remove()
	os.Exit(code)
}

func nsKey(i int) versionstore.ContentKey { return versionstore.ContentKey{fmt.Sprintf("ns%04d", i)} }

func tableKey(i, j int) versionstore.ContentKey {
	return versionstore.ContentKey{fmt.Sprintf("ns%04d", i), fmt.Sprintf("t%04d", j)}
}

// tableContent is a table at one version, with fields as long as a real
// catalog's. id is empty for a new table (the store assigns one).
func tableContent(k versionstore.ContentKey, version int, id string) *versionstore.Content {
	return &versionstore.Content{
		Type:               versionstore.IcebergTable,
		ID:                 id,
		MetadataLocation:   fmt.Sprintf("s3://warehouse/%s/metadata/%05d-7f3c2a9e-0b1d-4c5e-8f6a-%012d.metadata.json", strings.Join(k, "/"), version, version),
		UUID:               "5a8b3a4e-2f1c-4d6b-9e7a-0c1d2e3f4a5b",
		SnapshotID:         int64(version) * 7919,
		LastSequenceNumber: int64(version),
	}
}

func put(k versionstore.ContentKey, c *versionstore.Content) versionstore.Operation {
	return versionstore.Operation{Kind: versionstore.OpPut, Key: k, Content: c}
}

// timedBackend counts the store's durable writes: how many, how long they
// took and how many object bytes they carried.
type timedBackend struct {
	backend.Backend
	applies atomic.Int64
	nanos   atomic.Int64
	bytes   atomic.Int64
}

func (t *timedBackend) Apply(ctx context.Context, b backend.Batch) error {
	n := 0
	for _, o := range b.Objects {
		n += len(o.Data)
	}
	start := time.Now()
	err := t.Backend.Apply(ctx, b)
	t.nanos.Add(int64(time.Since(start)))
	t.applies.Add(1)
	t.bytes.Add(int64(n))
	return err
}

// openStore opens a store on Pebble in dir with production options (real
// disk, synced writes), over a timedBackend.
func openStore(ctx context.Context, dir string) (*versionstore.Store, *timedBackend, error) {
	be, err := pebblebackend.Open(dir, pebblebackend.Options{})
	if err != nil {
		return nil, nil, err
	}
	tb := &timedBackend{Backend: be}
	s, err := versionstore.Open(ctx, tb, versionstore.Options{})
	if err != nil {
		return nil, nil, errors.Join(err, be.Close())
	}
	return s, tb, nil
}

func openTempStore(b *testing.B) (*versionstore.Store, *timedBackend) {
	b.Helper()
	s, tb, err := openStore(b.Context(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s, tb
}

// writeCounters is a snapshot of a store's write counters.
type writeCounters struct {
	commits, batches      uint64
	applies, nanos, bytes int64
}

// writeMeter sums the store's writes over the windows between start and
// stop, so that a benchmark's untimed setup writes are left out.
type writeMeter struct {
	s           *versionstore.Store
	tb          *timedBackend
	mark, total writeCounters
	since       time.Time
	wall        time.Duration // of windows holding sequential operations
	ops         int           // sequential operations in those windows
}

func (m *writeMeter) read() writeCounters {
	st := m.s.Stats()
	return writeCounters{st.Commits.Load(), st.Batches.Load(), m.tb.applies.Load(), m.tb.nanos.Load(), m.tb.bytes.Load()}
}

func (m *writeMeter) start() { m.mark, m.since = m.read(), time.Now() }

// stop ends a window that held ops operations run one after another, or
// ops == 0 if they overlapped.
func (m *writeMeter) stop(ops int) {
	if ops > 0 {
		m.wall += time.Since(m.since)
		m.ops += ops
	}
	c := m.read()
	m.total.commits += c.commits - m.mark.commits
	m.total.batches += c.batches - m.mark.batches
	m.total.applies += c.applies - m.mark.applies
	m.total.nanos += c.nanos - m.mark.nanos
	m.total.bytes += c.bytes - m.mark.bytes
}

// report adds commits per synced batch (1 means no grouping), the mean time
// in Backend.Apply per batch, the object bytes written per commit and, for
// sequential operations, the mean time per operation spent outside
// Backend.Apply: the store's own work, whatever the disk is doing.
func (m *writeMeter) report(b *testing.B) {
	t := m.total
	if m.ops > 0 {
		b.ReportMetric(float64(m.wall.Nanoseconds()-t.nanos)/float64(m.ops)/1e3, "store-us/op")
	}
	if t.batches > 0 {
		b.ReportMetric(float64(t.commits)/float64(t.batches), "commits/batch")
	}
	if t.applies > 0 {
		b.ReportMetric(float64(t.nanos)/float64(t.applies)/1e3, "apply-us/batch")
	}
	if t.commits > 0 {
		b.ReportMetric(float64(t.bytes)/float64(t.commits), "obj-B/commit")
	}
}

func headOf(tb testing.TB, s *versionstore.Store, branch string) versionstore.Hash {
	tb.Helper()
	r, err := s.GetRef(branch)
	if err != nil {
		tb.Fatal(err)
	}
	return r.Head
}

// commit makes one commit on branch, based on the head it reads first.
func commit(ctx context.Context, s *versionstore.Store, branch string, ops ...versionstore.Operation) (*versionstore.CommitResult, error) {
	r, err := s.GetRef(branch)
	if err != nil {
		return nil, err
	}
	return s.Commit(ctx, versionstore.CommitRequest{
		Branch:     branch,
		Expected:   r.Head,
		Operations: ops,
		Meta:       versionstore.CommitMeta{Message: "bench"},
		Committer:  "bench",
	})
}

// loadCatalog fills branch with namespaces of tablesPerNS tables each, in
// commits of at most loadBatch puts.
func loadCatalog(ctx context.Context, s *versionstore.Store, branch string, namespaces, tablesPerNS int) error {
	ops := make([]versionstore.Operation, 0, loadBatch)
	flush := func() error {
		if _, err := commit(ctx, s, branch, ops...); err != nil {
			return fmt.Errorf("load %d keys: %w", len(ops), err)
		}
		ops = ops[:0]
		return nil
	}
	for i := range namespaces {
		// A namespace's key sorts before its tables', so it lands in the
		// same commit as its first tables or in an earlier one.
		ops = append(ops, put(nsKey(i), &versionstore.Content{Type: versionstore.Namespace}))
		for j := range tablesPerNS {
			if len(ops) == loadBatch {
				if err := flush(); err != nil {
					return err
				}
			}
			k := tableKey(i, j)
			ops = append(ops, put(k, tableContent(k, 0, "")))
		}
	}
	if len(ops) == 0 {
		return nil
	}
	return flush()
}

// sharedCatalog is a store built once per process in its own directory and
// reused by every benchmark that needs it. Benchmarks never move main:
// they write to branches created from base.
type sharedCatalog struct {
	once sync.Once
	err  error
	dir  string
	base versionstore.Hash // main's head once loaded

	mu sync.Mutex
	s  *versionstore.Store // nil while closed for another process
	tb *timedBackend
}

var (
	bigCatalog sharedCatalog // 1,000 namespaces x 1,000 tables
	refCatalog sharedCatalog // 256 references, a few keys
)

// store returns the shared store, building it with load on first use and
// reopening it if closeForChild closed it.
func (c *sharedCatalog) store(b *testing.B, name string, load func(ctx context.Context, s *versionstore.Store) error) (*versionstore.Store, *timedBackend) {
	b.Helper()
	c.once.Do(func() { c.err = c.build(b, name, load) })
	if c.err != nil {
		b.Fatal(c.err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s == nil {
		s, tb, err := openStore(context.Background(), c.dir)
		if err != nil {
			b.Fatal(err)
		}
		c.s, c.tb = s, tb
	}
	return c.s, c.tb
}

func (c *sharedCatalog) build(b *testing.B, name string, load func(ctx context.Context, s *versionstore.Store) error) error {
	ctx := context.Background()
	start := time.Now()
	dir, err := os.MkdirTemp("", "floe-bench-"+name+"-")
	if err != nil {
		return err
	}
	c.dir = dir
	s, tb, err := openStore(ctx, dir)
	if err != nil {
		return err
	}
	c.s, c.tb = s, tb
	if err := load(ctx, s); err != nil {
		return fmt.Errorf("build %s catalog: %w", name, err)
	}
	r, err := s.GetRef(versionstore.DefaultBranch)
	if err != nil {
		return err
	}
	c.base = r.Head
	loaded := time.Since(start)
	quiet := waitQuiet(2 * time.Minute)
	b.Logf("built the %s catalog in %v, then waited %v for background compactions", name, loaded.Round(time.Millisecond), quiet.Round(time.Millisecond))
	return nil
}

// waitQuiet waits, up to limit, until this process has used under 5% of a
// CPU for two consecutive half seconds: after a bulk load, Pebble compacts
// for a while, and latencies measured meanwhile would be mostly the
// compactions'. It returns how long it waited; without /proc it does not
// wait.
func waitQuiet(limit time.Duration) time.Duration {
	const window = 500 * time.Millisecond
	start := time.Now()
	prev, ok := cpuTime()
	if !ok {
		return 0
	}
	calm := 0
	for calm < 2 && time.Since(start) < limit {
		time.Sleep(window)
		cur, _ := cpuTime()
		if cur-prev < window/20 {
			calm++
		} else {
			calm = 0
		}
		prev = cur
	}
	return time.Since(start)
}

// cpuTime returns the CPU time this process has used, from /proc.
func cpuTime() (time.Duration, bool) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the parenthesised command: state is field 3, utime
	// and stime are 14 and 15, in clock ticks (100 per second on Linux).
	_, rest, ok := strings.Cut(string(stat), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(u+s) * 10 * time.Millisecond, true
}

// cpuMeter reports the CPU time the whole process spent per operation:
// the store, Pebble, the garbage collector and the benchmark's own
// committers. Unlike wall time it hardly moves when other processes keep
// the disk busy.
type cpuMeter struct {
	start time.Duration
	ok    bool
}

func startCPU() cpuMeter {
	t, ok := cpuTime()
	return cpuMeter{start: t, ok: ok}
}

func (c cpuMeter) report(b *testing.B, ops int) {
	end, ok := cpuTime()
	if !c.ok || !ok || ops == 0 {
		return
	}
	b.ReportMetric(float64((end-c.start).Nanoseconds())/float64(ops)/1e3, "cpu-us/op")
}

// closeForChild closes the store so another process can open its
// directory (Pebble locks it), and returns the directory.
func (c *sharedCatalog) closeForChild(b *testing.B) string {
	b.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s != nil {
		if err := c.s.Close(); err != nil {
			b.Fatal(err)
		}
		c.s, c.tb = nil, nil
	}
	return c.dir
}

func (c *sharedCatalog) remove() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s != nil {
		_ = c.s.Close()
		c.s, c.tb = nil, nil
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// big returns the shared 1M-key catalog and main's head; it skips under
// -short.
func big(b *testing.B) (*versionstore.Store, *timedBackend, versionstore.Hash) {
	b.Helper()
	if testing.Short() {
		b.Skip("the 1M-key catalog is skipped under -short")
	}
	s, tb := bigCatalog.store(b, "1M-key", func(ctx context.Context, s *versionstore.Store) error {
		return loadCatalog(ctx, s, versionstore.DefaultBranch, bigNamespaces, bigTablesPerNS)
	})
	return s, tb, bigCatalog.base
}

// branchSeq keeps the names of branches benchmarks create unique.
var branchSeq atomic.Int64

// branchFrom creates a branch at h.
func branchFrom(b *testing.B, s *versionstore.Store, purpose string, h versionstore.Hash) string {
	b.Helper()
	name := fmt.Sprintf("bench/%s-%d", purpose, branchSeq.Add(1))
	_, err := s.CreateRef(b.Context(), versionstore.CreateRefRequest{Name: name, Type: versionstore.Branch, Target: h, Principal: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return name
}

// BenchmarkDiskFsync measures the disk under the store: 4 KiB writes, each
// followed by an fsync, appended to a file or overwriting its first block.
// One committer cannot commit durably faster than this; group commit is how
// many committers do.
func BenchmarkDiskFsync(b *testing.B) {
	for _, mode := range []string{"append", "overwrite"} {
		b.Run(mode+"-4KiB", func(b *testing.B) {
			f, err := os.CreateTemp(b.TempDir(), "fsync")
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			buf := bytes.Repeat([]byte{0xa5}, 4096)
			var off int64
			for b.Loop() {
				if _, err := f.WriteAt(buf, off); err != nil {
					b.Fatal(err)
				}
				if err := f.Sync(); err != nil {
					b.Fatal(err)
				}
				if mode == "append" {
					off += int64(len(buf))
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "fsyncs/s")
		})
	}
}

// refs returns the shared store holding 256 references.
func refs(b *testing.B) *versionstore.Store {
	s, _ := refCatalog.store(b, "256-ref", func(ctx context.Context, s *versionstore.Store) error {
		if err := loadCatalog(ctx, s, versionstore.DefaultBranch, 1, 9); err != nil {
			return err
		}
		h := headOf(b, s, versionstore.DefaultBranch)
		for i := range 255 {
			_, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: fmt.Sprintf("feature/branch-%03d", i), Type: versionstore.Branch, Target: h, Principal: "bench"})
			if err != nil {
				return err
			}
		}
		return nil
	})
	return s
}

// BenchmarkResolveRef resolves one branch by name among 256 references:
// GetRef is the lookup alone; Resolve parses Nessie's reference notation
// first, as the REST layer does for every request that names a ref.
func BenchmarkResolveRef(b *testing.B) {
	s := refs(b)
	const name = "feature/branch-128"
	b.Run("GetRef", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.GetRef(name); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Resolve", func(b *testing.B) {
		ctx := b.Context()
		for b.Loop() {
			if _, err := s.Resolve(ctx, name); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkListRefs256 lists all 256 references.
func BenchmarkListRefs256(b *testing.B) {
	s := refs(b)
	if n := len(s.ListRefs()); n != 256 {
		b.Fatalf("store holds %d refs, want 256", n)
	}
	for b.Loop() {
		if len(s.ListRefs()) != 256 {
			b.Fatal("refs changed")
		}
	}
}

// BenchmarkCommitThroughput commits single new tables (distinct keys) to
// main of a fresh store, from 1 committer and from 64 concurrent ones.
// Every committer bases its commit on the head it has just read, as a
// client would, so concurrent commits are rebased by the store.
func BenchmarkCommitThroughput(b *testing.B) {
	setup := func(b *testing.B) (*versionstore.Store, *writeMeter) {
		s, tb := openTempStore(b)
		if _, err := commit(b.Context(), s, versionstore.DefaultBranch, put(nsKey(0), &versionstore.Content{Type: versionstore.Namespace})); err != nil {
			b.Fatal(err)
		}
		m := &writeMeter{s: s, tb: tb}
		m.start()
		return s, m
	}
	b.Run("committers=1", func(b *testing.B) {
		s, m := setup(b)
		ctx := b.Context()
		cpu := startCPU()
		i := 0
		for b.Loop() {
			k := versionstore.ContentKey{"ns0000", fmt.Sprintf("c0-%08d", i)}
			if _, err := commit(ctx, s, versionstore.DefaultBranch, put(k, tableContent(k, 0, ""))); err != nil {
				b.Fatal(err)
			}
			i++
		}
		m.stop(b.N)
		cpu.report(b, b.N)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		m.report(b)
	})
	b.Run("committers=64", func(b *testing.B) {
		const committers = 64
		s, m := setup(b)
		commitInParallel(b, s, committers)
		m.stop(0)
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		m.report(b)
	})
}

// BenchmarkCommitCPU is BenchmarkCommitThroughput/committers=64 without
// syncs: the disk's latency drops out, so ns/op is roughly the CPU the
// store (and Pebble) spend per commit when the committers keep the cores
// busy. On a shared machine the wall figures of the real benchmark
// swing with other processes' disk traffic; this one is steadier for
// comparing the store's own work before and after a change.
func BenchmarkCommitCPU(b *testing.B) {
	const committers = 64
	be, err := pebblebackend.Open(b.TempDir(), pebblebackend.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	tb := &timedBackend{Backend: be}
	s, err := versionstore.Open(b.Context(), tb, versionstore.Options{})
	if err != nil {
		b.Fatal(errors.Join(err, be.Close()))
	}
	defer s.Close()
	ctx := b.Context()
	if _, err := commit(ctx, s, versionstore.DefaultBranch, put(nsKey(0), &versionstore.Content{Type: versionstore.Namespace})); err != nil {
		b.Fatal(err)
	}
	m := &writeMeter{s: s, tb: tb}
	m.start()
	commitInParallel(b, s, committers)
	m.stop(0)
	m.report(b)
}

// commitInParallel has committers goroutines commit distinct new keys
// under ns0000 to main until b.N commits are done, with the clock and the
// CPU meter running only meanwhile.
func commitInParallel(b *testing.B, s *versionstore.Store, committers int) {
	ctx := b.Context()
	// RunParallel starts parallelism*GOMAXPROCS goroutines: exactly
	// committers when GOMAXPROCS divides it, as on 1, 2, 4 ... cores.
	// b.Loop has no parallel form.
	procs := runtime.GOMAXPROCS(0)
	b.SetParallelism((committers + procs - 1) / procs)
	var ids atomic.Int64
	b.ResetTimer()
	cpu := startCPU()
	b.RunParallel(func(pb *testing.PB) {
		id := ids.Add(1)
		i := 0
		for pb.Next() {
			k := versionstore.ContentKey{"ns0000", fmt.Sprintf("c%d-%08d", id, i)}
			if _, err := commit(ctx, s, versionstore.DefaultBranch, put(k, tableContent(k, 0, ""))); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
	b.StopTimer()
	cpu.report(b, b.N)
	if n := ids.Load(); int(n) != committers {
		b.Logf("ran %d committers, not %d: GOMAXPROCS=%d does not divide %d", n, committers, procs, committers)
	}
}

// BenchmarkCommitLatency updates one random existing table per commit, one
// committer, at three catalog sizes; updates keep the size constant. The
// tree is meant to keep the 1M-key latency within 3x of the 10-key one: a
// commit rewrites O(log n) nodes. ns/op is the mean; p50 and p99 are
// reported too.
func BenchmarkCommitLatency(b *testing.B) {
	for _, size := range []struct {
		name                    string
		namespaces, tablesPerNS int
	}{
		{"keys=10", 1, 9},
		{"keys=10k", 10, 999},
		{"keys=1M", bigNamespaces, bigTablesPerNS},
	} {
		b.Run(size.name, func(b *testing.B) {
			ctx := b.Context()
			var (
				s      *versionstore.Store
				tb     *timedBackend
				branch string
			)
			if size.namespaces == bigNamespaces {
				var base versionstore.Hash
				s, tb, base = big(b)
				branch = branchFrom(b, s, "latency", base)
			} else {
				s, tb = openTempStore(b)
				branch = versionstore.DefaultBranch
				if err := loadCatalog(ctx, s, branch, size.namespaces, size.tablesPerNS); err != nil {
					b.Fatal(err)
				}
			}
			m := &writeMeter{s: s, tb: tb}
			rng := rand.New(rand.NewPCG(1, 2))
			var lat []time.Duration
			version := 1
			for b.Loop() {
				// Reading the table's id is the client's business, not
				// part of the commit's latency.
				b.StopTimer()
				k := tableKey(rng.IntN(size.namespaces), rng.IntN(size.tablesPerNS))
				cur, err := s.GetContent(ctx, headOf(b, s, branch), k)
				if err != nil {
					b.Fatal(err)
				}
				op := put(k, tableContent(k, version, cur.ID))
				version++
				m.start()
				b.StartTimer()
				start := time.Now()
				if _, err := commit(ctx, s, branch, op); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				m.stop(1)
			}
			reportLatency(b, lat)
			m.report(b)
		})
	}
}

// reportLatency adds the median and 99th percentile to ns/op (the mean).
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

// randomTables picks n distinct tables of the large catalog.
func randomTables(rng *rand.Rand, n int) []versionstore.ContentKey {
	seen := map[[2]int]bool{}
	out := make([]versionstore.ContentKey, 0, n)
	for len(out) < n {
		p := [2]int{rng.IntN(bigNamespaces), rng.IntN(bigTablesPerNS)}
		if !seen[p] {
			seen[p] = true
			out = append(out, tableKey(p[0], p[1]))
		}
	}
	return out
}

// updates returns puts that give each key a new version, based on its
// content at h.
func updates(b *testing.B, s *versionstore.Store, h versionstore.Hash, keys []versionstore.ContentKey, version int) []versionstore.Operation {
	b.Helper()
	cur, err := s.GetContents(b.Context(), h, keys)
	if err != nil {
		b.Fatal(err)
	}
	ops := make([]versionstore.Operation, 0, len(keys))
	for _, k := range keys {
		c, ok := cur[string(k.Encode())]
		if !ok {
			b.Fatalf("table %s is missing", k)
		}
		ops = append(ops, put(k, tableContent(k, version, c.ID)))
	}
	return ops
}

// BenchmarkDiff1M diffs two commits of the 1M-key catalog that differ in 10
// tables spread over the key space.
func BenchmarkDiff1M(b *testing.B) {
	s, _, base := big(b)
	ctx := b.Context()
	branch := branchFrom(b, s, "diff", base)
	keys := randomTables(rand.New(rand.NewPCG(3, 4)), 10)
	res, err := commit(ctx, s, branch, updates(b, s, base, keys, 1)...)
	if err != nil {
		b.Fatal(err)
	}
	to := res.Commit.Hash
	for b.Loop() {
		d, _, err := s.Diff(ctx, base, to, versionstore.DiffOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if len(d) != len(keys) {
			b.Fatalf("diff has %d entries, want %d", len(d), len(keys))
		}
	}
}

// BenchmarkRebuild1M is the first read of a commit whose tree was not
// persisted, after a restart: the tree is rebuilt by replaying the commits
// between it and the end of its group-commit round onto the round's
// persisted tree, in the 1M-key catalog. 64 committers released at once
// make large rounds; the benchmark rebuilds the tree of the first commit
// of the largest.
func BenchmarkRebuild1M(b *testing.B) {
	s, _, base := big(b)
	ctx := b.Context()
	branch := branchFrom(b, s, "rebuild", base)
	ops := updates(b, s, base, randomTables(rand.New(rand.NewPCG(7, 8)), 64), 2)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, op := range ops {
		wg.Go(func() {
			<-start
			if _, err := s.Commit(ctx, versionstore.CommitRequest{Branch: branch, Expected: base, Committer: "bench",
				Operations: []versionstore.Operation{op}}); err != nil {
				b.Error(err)
			}
		})
	}
	close(start)
	wg.Wait()
	history, _, err := s.Log(ctx, headOf(b, s, branch), versionstore.LogOptions{Until: base})
	if err != nil {
		b.Fatal(err)
	}
	// Rebuild the tree with the longest replay: the first commit of the
	// largest round.
	var target versionstore.Hash
	longest := 0
	for _, c := range history {
		n, err := versionstore.RebuildTree(ctx, s, c.Hash)
		if err != nil {
			b.Fatal(err)
		}
		if n > longest {
			target, longest = c.Hash, n
		}
	}
	if longest == 0 {
		b.Skip("the 64 commits made no round of two: every tree was persisted")
	}
	replayed := 0
	for b.Loop() {
		if replayed, err = versionstore.RebuildTree(ctx, s, target); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(replayed), "commits-replayed")
}

// BenchmarkMerge1M merges a branch that updated 100 random tables into a
// branch of the 1M-key catalog that moved on meanwhile (one other table
// committed), so each merge finds a real merge base and writes a
// two-parent commit, durably. Preparing the source branch is not timed.
func BenchmarkMerge1M(b *testing.B) {
	s, tb, base := big(b)
	ctx := b.Context()
	target := branchFrom(b, s, "merge-target", base)
	m := &writeMeter{s: s, tb: tb}
	rng := rand.New(rand.NewPCG(5, 6))
	version := 1
	for b.Loop() {
		b.StopTimer()
		th := headOf(b, s, target)
		source := branchFrom(b, s, "merge-source", th)
		src, err := commit(ctx, s, source, updates(b, s, th, randomTables(rng, 100), version)...)
		if err != nil {
			b.Fatal(err)
		}
		other := versionstore.ContentKey{"ns0000", fmt.Sprintf("other-%08d", version)}
		moved, err := commit(ctx, s, target, put(other, tableContent(other, 0, "")))
		if err != nil {
			b.Fatal(err)
		}
		version++
		m.start()
		b.StartTimer()
		mr, err := s.Merge(ctx, versionstore.MergeRequest{
			Target:         target,
			ExpectedTarget: moved.Commit.Hash,
			From:           src.Commit.Hash,
			FromRef:        source,
			Committer:      "bench",
		})
		if err != nil {
			b.Fatal(err)
		}
		m.stop(1)
		if !mr.WasApplied || len(mr.Details) != 100 {
			b.Fatalf("merge applied=%v with %d keys, want 100", mr.WasApplied, len(mr.Details))
		}
	}
	m.report(b)
}

// rssDirEnv names the catalog directory TestRSSChild opens; it is set only
// in the child process BenchmarkOpenRSS1M starts.
const rssDirEnv = "FLOE_BENCH_RSS_DIR"

// BenchmarkOpenRSS1M measures the resident memory of a fresh process that
// opens the 1M-key catalog, resolves main, lists a namespace page and reads
// 1,000 random tables: the peak (VmHWM) and the final (VmRSS), in MiB.
// ns/op is that process's run time.
func BenchmarkOpenRSS1M(b *testing.B) {
	big(b)
	dir := bigCatalog.closeForChild(b)
	var hwm, rss float64
	for b.Loop() {
		cmd := exec.CommandContext(b.Context(), os.Args[0], "-test.run=^TestRSSChild$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), rssDirEnv+"="+dir)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("child: %v\n%s", err, out)
		}
		h, r, err := parseRSS(out)
		if err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
		hwm, rss = max(hwm, h), max(rss, r)
	}
	b.ReportMetric(hwm, "hwm-MB")
	b.ReportMetric(rss, "rss-MB")
}

// parseRSS finds the child's "floe-rss VmHWM=<kB> VmRSS=<kB>" line.
func parseRSS(out []byte) (hwmMB, rssMB float64, err error) {
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "floe-rss" {
			continue
		}
		h, err1 := strconv.ParseFloat(strings.TrimPrefix(f[1], "VmHWM="), 64)
		r, err2 := strconv.ParseFloat(strings.TrimPrefix(f[2], "VmRSS="), 64)
		if err := errors.Join(err1, err2); err != nil {
			return 0, 0, fmt.Errorf("child RSS line %q: %w", sc.Text(), err)
		}
		return h / 1024, r / 1024, nil
	}
	return 0, 0, fmt.Errorf("child printed no RSS line")
}

// TestRSSChild is the child process of BenchmarkOpenRSS1M; run directly it
// skips.
func TestRSSChild(t *testing.T) {
	t.Parallel()
	dir := os.Getenv(rssDirEnv)
	if dir == "" {
		t.Skip("only run by BenchmarkOpenRSS1M")
	}
	ctx := t.Context()
	s, _, err := openStore(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	head, err := s.Resolve(ctx, versionstore.DefaultBranch)
	if err != nil {
		t.Fatal(err)
	}
	page, _, err := s.Entries(ctx, head.Hash, versionstore.EntriesOptions{Prefix: nsKey(bigNamespaces / 2), Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 100 {
		t.Fatalf("namespace page has %d entries, want 100", len(page))
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 1000 {
		if _, err := s.GetContent(ctx, head.Hash, tableKey(rng.IntN(bigNamespaces), rng.IntN(bigTablesPerNS))); err != nil {
			t.Fatal(err)
		}
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	kB := func(field string) string {
		for line := range strings.Lines(string(status)) {
			if v, ok := strings.CutPrefix(line, field+":"); ok {
				return strings.TrimSuffix(strings.TrimSpace(v), " kB")
			}
		}
		return "?"
	}
	fmt.Printf("floe-rss VmHWM=%s VmRSS=%s\n", kB("VmHWM"), kB("VmRSS"))
}
