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
// The 1M-key catalog takes a while to load, so it is built once per test
// process and shared; the RSS check runs in a child process (this test
// binary re-executed) so that the benchmark process's own heap does not
// count. `make bench` runs them all and tabulates the results.

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
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// The shape of the large catalog: namespaces of tablesPerNS tables each,
// loaded in commits of loadBatch puts.
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

// branchSeq keeps branch names created by benchmarks unique in a process.
var branchSeq atomic.Int64

func uniqueBranch(purpose string) string {
	return fmt.Sprintf("bench/%s-%d", purpose, branchSeq.Add(1))
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

// openStore opens a store on Pebble in dir with production options.
func openStore(ctx context.Context, dir string) (*versionstore.Store, error) {
	be, err := pebblebackend.Open(dir, pebblebackend.Options{})
	if err != nil {
		return nil, err
	}
	s, err := versionstore.Open(ctx, be, versionstore.Options{})
	if err != nil {
		return nil, errors.Join(err, be.Close())
	}
	return s, nil
}

func openTempStore(b *testing.B) *versionstore.Store {
	b.Helper()
	s, err := openStore(b.Context(), b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	return s
}

func headOf(tb testing.TB, s *versionstore.Store, branch string) versionstore.Hash {
	tb.Helper()
	r, err := s.GetRef(branch)
	if err != nil {
		tb.Fatal(err)
	}
	return r.Head
}

// commit makes one commit on branch based on its current head.
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
// commits of at most loadBatch puts, and returns the new head.
func loadCatalog(ctx context.Context, s *versionstore.Store, branch string, namespaces, tablesPerNS int) (versionstore.Hash, error) {
	ops := make([]versionstore.Operation, 0, loadBatch)
	var head versionstore.Hash
	flush := func() error {
		res, err := commit(ctx, s, branch, ops...)
		if err != nil {
			return fmt.Errorf("load %d keys: %w", len(ops), err)
		}
		head, ops = res.Commit.Hash, ops[:0]
		return nil
	}
	for i := range namespaces {
		// A namespace's key sorts before its tables', so it lands in the
		// same commit as its first tables or in an earlier one.
		ops = append(ops, put(nsKey(i), &versionstore.Content{Type: versionstore.Namespace}))
		for j := range tablesPerNS {
			if len(ops) == loadBatch {
				if err := flush(); err != nil {
					return head, err
				}
			}
			k := tableKey(i, j)
			ops = append(ops, put(k, tableContent(k, 0, "")))
		}
	}
	if len(ops) > 0 {
		if err := flush(); err != nil {
			return head, err
		}
	}
	return head, nil
}

// sharedCatalog is a store built once per process in its own directory and
// reused by every benchmark that needs it. Benchmarks never move main: they
// write to branches created from base.
type sharedCatalog struct {
	once sync.Once
	err  error
	dir  string
	base versionstore.Hash // main's head once loaded

	mu sync.Mutex
	s  *versionstore.Store // nil while closed for another process
}

var (
	bigCatalog sharedCatalog // 1,000 namespaces x 1,000 tables
	refCatalog sharedCatalog // 256 references, a few keys
)

// store returns the shared store, building it with load on first use and
// reopening it if closeForChild closed it.
func (c *sharedCatalog) store(b *testing.B, name string, load func(ctx context.Context, s *versionstore.Store) error) *versionstore.Store {
	b.Helper()
	c.once.Do(func() {
		ctx := context.Background()
		start := time.Now()
		dir, err := os.MkdirTemp("", "floe-bench-"+name+"-")
		if err != nil {
			c.err = err
			return
		}
		c.dir = dir
		s, err := openStore(ctx, dir)
		if err != nil {
			c.err = err
			return
		}
		c.s = s
		if err := load(ctx, s); err != nil {
			c.err = fmt.Errorf("build %s catalog: %w", name, err)
			return
		}
		r, err := s.GetRef(versionstore.DefaultBranch)
		if err != nil {
			c.err = err
			return
		}
		c.base = r.Head
		b.Logf("built %s catalog in %s in %v", name, dir, time.Since(start).Round(time.Millisecond))
	})
	if c.err != nil {
		b.Fatal(c.err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s == nil {
		s, err := openStore(context.Background(), c.dir)
		if err != nil {
			b.Fatal(err)
		}
		c.s = s
	}
	return c.s
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
		c.s = nil
	}
	return c.dir
}

func (c *sharedCatalog) remove() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.s != nil {
		_ = c.s.Close()
		c.s = nil
	}
	if c.dir != "" {
		_ = os.RemoveAll(c.dir)
	}
}

// big returns the shared 1M-key catalog; it skips under -short.
func big(b *testing.B) (*versionstore.Store, versionstore.Hash) {
	b.Helper()
	if testing.Short() {
		b.Skip("the 1M-key catalog is skipped under -short")
	}
	s := bigCatalog.store(b, "1m", func(ctx context.Context, s *versionstore.Store) error {
		_, err := loadCatalog(ctx, s, versionstore.DefaultBranch, bigNamespaces, bigTablesPerNS)
		return err
	})
	return s, bigCatalog.base
}

// branchFrom creates a branch at h.
func branchFrom(b *testing.B, s *versionstore.Store, purpose string, h versionstore.Hash) string {
	b.Helper()
	name := uniqueBranch(purpose)
	_, err := s.CreateRef(b.Context(), versionstore.CreateRefRequest{Name: name, Type: versionstore.Branch, Target: h, Principal: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return name
}

// BenchmarkDiskFsync measures the disk under the store: how many 4 KiB
// writes per second can each be followed by an fsync. A single committer
// cannot commit durably faster than this; group commit is how many
// committers do.
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
	return refCatalog.store(b, "refs", func(ctx context.Context, s *versionstore.Store) error {
		h, err := loadCatalog(ctx, s, versionstore.DefaultBranch, 1, 9)
		if err != nil {
			return err
		}
		for i := range 255 {
			_, err := s.CreateRef(ctx, versionstore.CreateRefRequest{Name: fmt.Sprintf("feature/branch-%03d", i), Type: versionstore.Branch, Target: h, Principal: "bench"})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkResolveRef resolves one branch by name among 256 references:
// GetRef is the lookup itself, Resolve parses Nessie's reference notation
// first, as the REST layer does for every request.
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

// BenchmarkCommitThroughput commits single new tables (distinct keys) to one
// branch of a fresh store, from 1 committer and from 64 concurrent ones.
// Every committer bases its commit on the head it last read, as a client
// would, so concurrent commits are rebased by the store.
func BenchmarkCommitThroughput(b *testing.B) {
	setup := func(b *testing.B) *versionstore.Store {
		s := openTempStore(b)
		if _, err := commit(b.Context(), s, versionstore.DefaultBranch, put(nsKey(0), &versionstore.Content{Type: versionstore.Namespace})); err != nil {
			b.Fatal(err)
		}
		return s
	}
	b.Run("committers=1", func(b *testing.B) {
		s := setup(b)
		ctx := b.Context()
		i := 0
		for b.Loop() {
			k := versionstore.ContentKey{"ns0000", fmt.Sprintf("c0-%08d", i)}
			if _, err := commit(ctx, s, versionstore.DefaultBranch, put(k, tableContent(k, 0, ""))); err != nil {
				b.Fatal(err)
			}
			i++
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	})
	b.Run("committers=64", func(b *testing.B) {
		const committers = 64
		s := setup(b)
		ctx := b.Context()
		// RunParallel starts parallelism*GOMAXPROCS goroutines: exactly 64
		// when GOMAXPROCS divides 64, as on 1, 2, 4 ... cores.
		procs := runtime.GOMAXPROCS(0)
		b.SetParallelism((committers + procs - 1) / procs)
		var ids, started atomic.Int64
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			id := ids.Add(1)
			started.Add(1)
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
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		b.ReportMetric(float64(started.Load()), "committers")
	})
}

// BenchmarkCommitLatency updates one random existing table per commit, one
// committer, at three catalog sizes; updates keep the size constant. The
// store's tree is meant to make the 1M-key latency at most 3x the 10-key
// one: a commit rewrites O(log n) nodes.
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
			var s *versionstore.Store
			var branch string
			if size.namespaces == bigNamespaces {
				var base versionstore.Hash
				s, base = big(b)
				branch = branchFrom(b, s, "latency", base)
			} else {
				s = openTempStore(b)
				branch = versionstore.DefaultBranch
				if _, err := loadCatalog(ctx, s, branch, size.namespaces, size.tablesPerNS); err != nil {
					b.Fatal(err)
				}
			}
			rng := rand.New(rand.NewPCG(1, 2))
			var lat []time.Duration
			version := 1
			for b.Loop() {
				// Reading the table's id is the client's business and
				// not part of the commit's latency.
				b.StopTimer()
				k := tableKey(rng.IntN(size.namespaces), rng.IntN(size.tablesPerNS))
				cur, err := s.GetContent(ctx, headOf(b, s, branch), k)
				if err != nil {
					b.Fatal(err)
				}
				op := put(k, tableContent(k, version, cur.ID))
				b.StartTimer()
				start := time.Now()
				if _, err := commit(ctx, s, branch, op); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				version++
			}
			reportLatency(b, lat)
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

// updates returns puts that give each key a new version, read at h.
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
	s, base := big(b)
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

// BenchmarkMerge1M merges a branch that updated 100 tables into a branch of
// the 1M-key catalog that moved on meanwhile (one other table committed),
// so each merge finds a real merge base and writes a two-parent commit,
// durably. Creating the source branch and its commit is not timed.
func BenchmarkMerge1M(b *testing.B) {
	s, base := big(b)
	ctx := b.Context()
	target := branchFrom(b, s, "merge-target", base)
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
		if !mr.WasApplied || len(mr.Details) != 100 {
			b.Fatalf("merge applied=%v with %d keys, want 100", mr.WasApplied, len(mr.Details))
		}
	}
}

// rssDirEnv names the catalog directory TestRSSChild opens; it is set only
// in the child process BenchmarkOpenRSS1M starts.
const rssDirEnv = "FLOE_BENCH_RSS_DIR"

// BenchmarkOpenRSS1M measures the resident memory of a fresh process that
// opens the 1M-key catalog, resolves main, lists a namespace page and reads
// 1,000 random tables. It reports the peak (VmHWM) and final (VmRSS) RSS.
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
	dir := os.Getenv(rssDirEnv)
	if dir == "" {
		t.Skip("only run by BenchmarkOpenRSS1M")
	}
	ctx := t.Context()
	s, err := openStore(ctx, dir)
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
