package icebergrest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/gorilla/mux"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/server"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// These benchmarks drive the Iceberg REST facade the way engines do: over
// HTTP on loopback, against floe's real server (middleware and timeouts
// included, http.Server from server.Serve, not httptest), Pebble with
// synced writes in a temporary directory and a file:// warehouse in
// another. Clients are plain net/http clients with keep-alive connections,
// one goroutine per client. Client and server share the machine's CPUs, so
// the numbers are what one box can do end to end, not the server alone.
//
// ns/op is wall time divided by the operations done (the inverse of the
// throughput); p50-us and p99-us are per-request latencies as a client sees
// them.

// benchServer is a running floe server and a client for it.
type benchServer struct {
	url    string
	client *http.Client
	store  *versionstore.Store
	// header is sent with every request (name, value, ...).
	header []string
}

// startBenchServer starts a server for one benchmark run; it stops when the
// run ends. clients sizes the connection pool so every client keeps its
// connection between requests.
func startBenchServer(b *testing.B, clients int, configure ...func(*icebergrest.Deps)) *benchServer {
	b.Helper()
	dir := benchDir(b)
	// The zero Options are production's: synced writes.
	be, err := pebblebackend.Open(filepath.Join(dir, "data"), pebblebackend.Options{})
	if err != nil {
		b.Fatal(err)
	}
	store, err := versionstore.Open(context.Background(), be, versionstore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	whDir := filepath.Join(dir, "warehouse")
	if err := os.MkdirAll(whDir, 0o750); err != nil {
		b.Fatal(err)
	}
	wh := (&url.URL{Scheme: "file", Path: filepath.ToSlash(whDir)}).String()
	registry := prometheus.NewRegistry() // the facade's metrics on the server's /metrics
	cat, err := catalog.New(store, catalog.Config{Warehouses: []catalog.Warehouse{{Name: "lake", Location: wh}}}, catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	deps := icebergrest.Deps{Store: store, Catalog: cat, Metrics: registry, Warehouses: []icebergrest.Warehouse{{Name: "lake", Location: wh}}}
	for _, c := range configure {
		c(&deps)
	}
	api, err := icebergrest.New(deps)
	if err != nil {
		b.Fatal(err)
	}
	mount := func(r *mux.Router) error {
		api.Routes(r)
		return nil
	}
	srv, err := server.New(server.Config{Mounts: []server.Mount{mount}, Registry: registry}, slog.New(slog.DiscardHandler), store)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := new(net.ListenConfig).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	transport := &http.Transport{
		MaxIdleConns:        clients + 4,
		MaxIdleConnsPerHost: clients + 4,
		IdleConnTimeout:     90 * time.Second,
	}
	b.Cleanup(func() {
		transport.CloseIdleConnections()
		stop()
		if err := <-served; err != nil {
			b.Errorf("server: %v", err)
		}
		if err := store.Close(); err != nil {
			b.Errorf("close store: %v", err)
		}
	})
	return &benchServer{
		url:    "http://" + ln.Addr().String(),
		client: &http.Client{Transport: transport, Timeout: time.Minute},
		store:  store,
	}
}

// benchRoot holds every benchmark server's store and warehouse until the
// test binary exits (TestMain), instead of b.TempDir's removal at the end
// of each run: on ext4 without a journal (this project's machine) every
// file create skips, one by one, each inode freed in the last 5 to 300
// seconds in its block group, so removing the thousands of metadata files
// of one run (the b.N=1 run the testing package always does first, or the
// previous sub-benchmark) made each file create of the next run cost
// hundreds of microseconds of kernel time more (BenchmarkWriteLocalFile in
// icebergtable measures it: freed=3200).
var benchRoot string

func TestMain(m *testing.M) {
	root, err := os.MkdirTemp("", "icebergrest-bench-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	benchRoot = root
	code := m.Run()
	_ = os.RemoveAll(root)
	os.Exit(code)
}

// benchDir is a new directory for one benchmark run, removed only when the
// test binary exits (see benchRoot).
func benchDir(b *testing.B) string {
	b.Helper()
	dir, err := os.MkdirTemp(benchRoot, "run-")
	if err != nil {
		b.Fatal(err)
	}
	return dir
}

// call sends one request and reads the whole answer. It reports errors
// rather than failing, so client goroutines can use it.
func (s *benchServer) call(ctx context.Context, method, path string, body []byte, header ...string) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range [][]string{s.header, header} {
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
	}
	res, err := s.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("%s %s: reading the answer: %w", method, path, err)
	}
	return res.StatusCode, data, nil
}

// must sends a request on the benchmark goroutine that has to answer want.
func (s *benchServer) must(b *testing.B, method, path string, body []byte, want int) []byte {
	b.Helper()
	status, data, err := s.call(b.Context(), method, path, body)
	if err != nil {
		b.Fatal(err)
	}
	if status != want {
		b.Fatalf("%s %s: status %d, want %d: %.500s", method, path, status, want, data)
	}
	return data
}

// tableState is what a writer needs from a loaded or committed table to
// build its next commit.
type tableState struct {
	Metadata struct {
		UUID               string `json:"table-uuid"`
		Location           string `json:"location"`
		CurrentSnapshotID  *int64 `json:"current-snapshot-id"`
		LastSequenceNumber int64  `json:"last-sequence-number"`
		Snapshots          []struct {
			ID           int64  `json:"snapshot-id"`
			ManifestList string `json:"manifest-list"`
		} `json:"snapshots"`
		MetadataLog []json.RawMessage `json:"metadata-log"`
	} `json:"metadata"`
}

func decodeState(data []byte) (*tableState, error) {
	var st tableState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("decoding table: %w: %.200s", err, data)
	}
	// Java writes -1 for "no current snapshot".
	if st.Metadata.CurrentSnapshotID != nil && *st.Metadata.CurrentSnapshotID < 0 {
		st.Metadata.CurrentSnapshotID = nil
	}
	return &st, nil
}

func (s *benchServer) createTable(b *testing.B, ns, name string) *tableState {
	b.Helper()
	st, err := decodeState(s.must(b, http.MethodPost, "/v1/lake/namespaces/"+ns+"/tables", []byte(createTableBody(name, "")), http.StatusOK))
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// appendCommit is one writer's append as an engine sends it: a new
// snapshot whose manifest list it has written (here the file does not
// exist: the catalog never reads it), main moved to it, and the
// requirement that main still points where the writer read it.
func appendCommit(st *tableState, snapshotID int64, now time.Time) []byte {
	parent := st.Metadata.CurrentSnapshotID
	var sb strings.Builder
	sb.WriteString(`{"requirements":[{"type":"assert-table-uuid","uuid":"` + st.Metadata.UUID + `"},`)
	sb.WriteString(`{"type":"assert-ref-snapshot-id","ref":"main","snapshot-id":`)
	if parent == nil {
		sb.WriteString("null")
	} else {
		sb.WriteString(strconv.FormatInt(*parent, 10))
	}
	sb.WriteString(`}],"updates":[`)
	writeSnapshotUpdates(&sb, st.Metadata.Location, parent, snapshotID, st.Metadata.LastSequenceNumber+1, now)
	sb.WriteString(`]}`)
	return []byte(sb.String())
}

// writeSnapshotUpdates writes the add-snapshot and set-snapshot-ref updates
// of one append, with the summary Java's fast append writes.
func writeSnapshotUpdates(sb *strings.Builder, location string, parent *int64, id, seq int64, now time.Time) {
	ids := strconv.FormatInt(id, 10)
	sb.WriteString(`{"action":"add-snapshot","snapshot":{"snapshot-id":` + ids)
	if parent != nil {
		sb.WriteString(`,"parent-snapshot-id":` + strconv.FormatInt(*parent, 10))
	}
	total := strconv.FormatInt(seq*1000, 10)
	fmt.Fprintf(sb, `,"sequence-number":%d,"timestamp-ms":%d,"manifest-list":"%s/metadata/snap-%s-1-%08x-0000-0000-0000-000000000000.avro",`,
		seq, now.UnixMilli(), location, ids, uint32(id))
	sb.WriteString(`"summary":{"operation":"append","added-data-files":"1","added-records":"1000","added-files-size":"65536",` +
		`"changed-partition-count":"1","total-records":"` + total + `","total-files-size":"` + strconv.FormatInt(seq*65536, 10) +
		`","total-data-files":"` + strconv.FormatInt(seq, 10) + `","total-delete-files":"0","total-position-deletes":"0",` +
		`"total-equality-deletes":"0"},"schema-id":0}},`)
	sb.WriteString(`{"action":"set-snapshot-ref","ref-name":"main","type":"branch","snapshot-id":` + ids + `}`)
}

// setPropertyCommit is the smallest real table commit: one property set,
// guarded by the table's uuid.
func setPropertyCommit(uuid, value string) []byte {
	return []byte(`{"requirements":[{"type":"assert-table-uuid","uuid":"` + uuid +
		`"}],"updates":[{"action":"set-properties","updates":{"bench.seq":"` + value + `"}}]}`)
}

// newSnapshotID is a positive random id, as Java derives from a UUID.
func newSnapshotID() int64 { return rand.Int64N(1<<62) + 1 }

// processCPU returns the CPU time the process has used so far, where the
// platform can tell (bench_cpu_test.go); nil elsewhere.
var processCPU func() time.Duration

// processSysCPU is the part of processCPU spent in the kernel: on this
// project's machine creating a file alone can cost hundreds of
// microseconds there (see the package README), which floe's code does not
// control.
var processSysCPU func() time.Duration

// cpuMeter reports the process's CPU time per operation, cpu-us/op: on a
// shared machine it says what an operation costs better than wall time.
// Client work is included: clients run in the same process.
// sys-us/op is the kernel's share of it.
type cpuMeter struct{ start, sys time.Duration }

func startCPU() cpuMeter {
	if processCPU == nil {
		return cpuMeter{-1, -1}
	}
	return cpuMeter{processCPU(), processSysCPU()}
}

func (m cpuMeter) report(b *testing.B, ops int) {
	if m.start < 0 || ops == 0 {
		return
	}
	if now := processCPU(); now >= 0 {
		b.ReportMetric(float64((now-m.start).Microseconds())/float64(ops), "cpu-us/op")
	}
	if now := processSysCPU(); now >= 0 && m.sys >= 0 {
		b.ReportMetric(float64((now-m.sys).Microseconds())/float64(ops), "sys-us/op")
	}
}

// latencies collects per-request durations from several clients.
type latencies struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *latencies) add(d []time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, d...)
	l.mu.Unlock()
}

// report adds the median and 99th percentile (microseconds) to the result.
func (l *latencies) report(b *testing.B) {
	if len(l.all) == 0 {
		return
	}
	slices.Sort(l.all)
	pct := func(p float64) float64 {
		return float64(l.all[min(len(l.all)-1, int(p*float64(len(l.all))))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-us")
	b.ReportMetric(pct(0.99), "p99-us")
}

// runClients runs clients goroutines that share b.N operations; op does
// operation i for one client and returns its latency. The first error
// stops every client and fails the benchmark.
func runClients(b *testing.B, clients int, op func(ctx context.Context, client int, i int64) (time.Duration, error)) *latencies {
	b.Helper()
	cpu := startCPU()
	defer func() { cpu.report(b, b.N) }()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	var (
		next    atomic.Int64
		lat     latencies
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	b.ResetTimer()
	for c := range clients {
		wg.Go(func() {
			mine := make([]time.Duration, 0, b.N/clients+1)
			defer func() { lat.add(mine) }()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				d, err := op(ctx, c, i)
				if err != nil {
					errOnce.Do(func() { first = err; cancel() })
					return
				}
				mine = append(mine, d)
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	if first != nil && !errors.Is(first, context.Canceled) {
		b.Fatal(first)
	}
	return &lat
}

// BenchmarkTableCommit is updateTable through HTTP: each client commits
// set-properties with assert-table-uuid to its own table, one commit after
// the other. All tables live on main, so every commit goes through main's
// committer; distinct tables never conflict, and concurrent commits share
// group-commit batches. Each commit writes and fsyncs a metadata file and
// its directory, then commits durably.
//
// Before the clock starts every table gets metadataLogMax commits, so its
// metadata-log is full as a long-lived table's is and each measured commit
// handles metadata of the same size whatever b.N.
func BenchmarkTableCommit(b *testing.B) {
	for _, clients := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			s := startBenchServer(b, clients)
			commit, replyBytes := s.tableCommits(b, "/v1/lake", clients)
			stats := s.store.Stats()
			commits0, batches0 := stats.Commits.Load(), stats.Batches.Load()
			lat := runClients(b, clients, func(ctx context.Context, c int, i int64) (time.Duration, error) {
				return commit(ctx, c, strconv.FormatInt(i, 10))
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			lat.report(b)
			// The answer carries the new metadata: its size is what each
			// commit parses, encodes and writes.
			b.ReportMetric(float64(replyBytes.Load())/1024, "reply-KiB")
			if n := stats.Batches.Load() - batches0; n > 0 {
				b.ReportMetric(float64(stats.Commits.Load()-commits0)/float64(n), "commits/batch")
			}
		})
	}
}

// BenchmarkBigTableCommit is BenchmarkTableCommit's property commit on a
// table with 1,000 snapshots (a metadata file of about 650 KiB), one
// client: what a commit costs when the metadata is large, which every
// commit reads, re-encodes, writes and answers.
func BenchmarkBigTableCommit(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a table with 1,000 snapshots")
	}
	s := startBenchServer(b, 1)
	s.must(b, http.MethodPost, "/v1/lake/namespaces", []byte(`{"namespace":["bench"]}`), http.StatusOK)
	path := buildBigTable(b, s, "big")
	st, err := decodeState(s.must(b, http.MethodGet, path, nil, http.StatusOK))
	if err != nil {
		b.Fatal(err)
	}
	var replyBytes atomic.Int64
	lat := runClients(b, 1, func(ctx context.Context, _ int, i int64) (time.Duration, error) {
		start := time.Now()
		status, data, err := s.call(ctx, http.MethodPost, path, setPropertyCommit(st.Metadata.UUID, strconv.FormatInt(i, 10)))
		d := time.Since(start)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("commit: status %d: %.300s", status, data)
		}
		replyBytes.Store(int64(len(data)))
		return d, err
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
	lat.report(b)
	b.ReportMetric(float64(replyBytes.Load())/1024, "reply-KiB")
}

// tableCommits creates namespace bench and tables t00, t01, ... (one per
// client) under prefix ("/v1/lake" or a branch's), gives every table
// metadataLogMax commits so its metadata-log is full, and returns one
// client's commit: set-properties with assert-table-uuid on its own
// table. replyBytes holds the size of the last answer.
func (s *benchServer) tableCommits(b *testing.B, prefix string, clients int) (commit func(ctx context.Context, c int, value string) (time.Duration, error), replyBytes *atomic.Int64) {
	b.Helper()
	s.must(b, http.MethodPost, prefix+"/namespaces", []byte(`{"namespace":["bench"]}`), http.StatusOK)
	uuids := make([]string, clients)
	for c := range clients {
		st, err := decodeState(s.must(b, http.MethodPost, prefix+"/namespaces/bench/tables",
			[]byte(createTableBody(fmt.Sprintf("t%02d", c), "")), http.StatusOK))
		if err != nil {
			b.Fatal(err)
		}
		uuids[c] = st.Metadata.UUID
	}
	replyBytes = new(atomic.Int64)
	commit = func(ctx context.Context, c int, value string) (time.Duration, error) {
		path := prefix + fmt.Sprintf("/namespaces/bench/tables/t%02d", c)
		start := time.Now()
		status, data, err := s.call(ctx, http.MethodPost, path, setPropertyCommit(uuids[c], value))
		d := time.Since(start)
		if err == nil && status != http.StatusOK {
			err = fmt.Errorf("commit to t%02d: status %d: %.300s", c, status, data)
		}
		replyBytes.Store(int64(len(data)))
		return d, err
	}
	var warm sync.WaitGroup
	warmErrs := make([]error, clients)
	for c := range clients {
		warm.Go(func() {
			for i := range metadataLogMax {
				if _, err := commit(b.Context(), c, "warm-"+strconv.Itoa(i)); err != nil {
					warmErrs[c] = err
					return
				}
			}
		})
	}
	warm.Wait()
	if err := errors.Join(warmErrs...); err != nil {
		b.Fatal(err)
	}
	return commit, replyBytes
}

// BenchmarkHotTableAppend has 8 and 32 writers (and, for comparison, one)
// append to one table. Each append is what an engine's fast append
// commits: add-snapshot and set-snapshot-ref main, with
// assert-ref-snapshot-id on the main it read, after writing a real
// manifest (one data file entry; the data file itself is never read) and a
// manifest list holding its parent's manifests and the new one. A writer
// loads the table, commits, and on 409 CommitFailedException loads the
// table again, rewrites its manifest list on the new head and retries at
// once (no client backoff), as often as it takes. ns/op and the latencies
// cover the whole append: loads, failed attempts, success.
//
// rebase=on is floe's default: a stale append is re-parented by the
// server (zero-retry appends), so every append should land on its first
// attempt. rebase=off sets floe.commit.rebase-appends=false, the plain
// Iceberg REST behaviour. first-try-% is the share of appends that landed
// on their first attempt; over4-% the share that needed more than 4
// retries: those a Java client with the default
// commit.retry.num-retries=4 would have given up on.
//
// The table gains one snapshot per append, so its metadata grows with b.N:
// compare runs with the same -benchtime=<N>x. snapshots=0 starts from an
// empty table, snapshots=1000 from one with 1,000 snapshots (their
// manifest lists are not real files: the first append before the clock
// starts makes the head's real).
func BenchmarkHotTableAppend(b *testing.B) {
	for _, initial := range []int{0, bigTableSnapshots} {
		for _, rebase := range []bool{true, false} {
			// One writer is the baseline: the cost of an append without
			// contention.
			for _, clients := range []int{1, 8, 32} {
				name := fmt.Sprintf("snapshots=%d/rebase=%s/clients=%d", initial, map[bool]string{true: "on", false: "off"}[rebase], clients)
				b.Run(name, func(b *testing.B) {
					if initial > 0 && testing.Short() {
						b.Skip("builds a table with 1,000 snapshots")
					}
					benchHotTableAppend(b, initial, clients, rebase)
				})
			}
		}
	}
}

func benchHotTableAppend(b *testing.B, initial, clients int, rebase bool) {
	s := startBenchServer(b, clients)
	s.must(b, http.MethodPost, "/v1/lake/namespaces", []byte(`{"namespace":["bench"]}`), http.StatusOK)
	path := "/v1/lake/namespaces/bench/tables/hot"
	if initial > 0 {
		buildBigTable(b, s, "hot")
	} else {
		s.createTable(b, "bench", "hot")
	}
	if !rebase {
		st, err := decodeState(s.must(b, http.MethodGet, path, nil, http.StatusOK))
		if err != nil {
			b.Fatal(err)
		}
		s.must(b, http.MethodPost, path, []byte(`{"requirements":[{"type":"assert-table-uuid","uuid":"`+st.Metadata.UUID+
			`"}],"updates":[{"action":"set-properties","updates":{"floe.commit.rebase-appends":"false"}}]}`), http.StatusOK)
	}
	// One append before the clock: the head's manifest list becomes a real
	// file, and it is what every append then builds on.
	appendOne := func(ctx context.Context) (attempts int, err error) {
		id := newSnapshotID()
		for attempt := 0; ; attempt++ {
			status, data, err := s.call(ctx, http.MethodGet, path, nil)
			if err != nil {
				return 0, err
			}
			if status != http.StatusOK {
				return 0, fmt.Errorf("load: status %d: %.300s", status, data)
			}
			st, err := decodeState(data)
			if err != nil {
				return 0, err
			}
			list, err := writeAppendFiles(st, id)
			if err != nil {
				return 0, err
			}
			status, data, err = s.call(ctx, http.MethodPost, path, appendCommitWithList(st, id, list, time.Now()))
			switch {
			case err != nil:
				return 0, err
			case status == http.StatusOK:
				return attempt + 1, nil
			case status == http.StatusConflict && attempt < 10000:
			default:
				return 0, fmt.Errorf("append after %d attempts: status %d: %.300s", attempt+1, status, data)
			}
		}
	}
	if _, err := appendOne(b.Context()); err != nil {
		b.Fatal(err)
	}
	retries0 := scrapeCounter(b, s, `floe_iceberg_commit_retries_total{operation="update"}`)
	rebased0 := scrapeCounter(b, s, `floe_iceberg_commits_total{operation="append",outcome="rebased"}`)
	var retries, over4, maxRetries, firstTry atomic.Int64
	lat := runClients(b, clients, func(ctx context.Context, c int, i int64) (time.Duration, error) {
		start := time.Now()
		attempts, err := appendOne(ctx)
		if err != nil {
			return 0, err
		}
		if attempts == 1 {
			firstTry.Add(1)
		}
		if attempts > 5 {
			over4.Add(1)
		}
		retries.Add(int64(attempts - 1))
		storeMax(&maxRetries, int64(attempts-1))
		return time.Since(start), nil
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
	b.ReportMetric(100*float64(firstTry.Load())/float64(b.N), "first-try-%")
	b.ReportMetric(float64(retries.Load())/float64(b.N), "retries/append")
	b.ReportMetric(float64(maxRetries.Load()), "max-retries")
	b.ReportMetric(100*float64(over4.Load())/float64(b.N), "over4-%")
	lat.report(b)
	// Server-side retries: commits the store refused because the table
	// moved, re-validated after a backoff pause and then (the requirement
	// failing) answered 409 or rebased.
	retries1 := scrapeCounter(b, s, `floe_iceberg_commit_retries_total{operation="update"}`)
	b.ReportMetric((retries1-retries0)/float64(b.N), "srv-retries/append")
	rebased1 := scrapeCounter(b, s, `floe_iceberg_commits_total{operation="append",outcome="rebased"}`)
	b.ReportMetric(100*(rebased1-rebased0)/float64(b.N), "rebased-%")
	st, err := decodeState(s.must(b, http.MethodGet, path, nil, http.StatusOK))
	if err != nil {
		b.Fatal(err)
	}
	if len(st.Metadata.Snapshots) != initial+1+b.N {
		b.Fatalf("the table has %d snapshots after %d appends to %d", len(st.Metadata.Snapshots), b.N+1, initial)
	}
}

// benchSchema and benchSpec are the table createTableBody makes.
var (
	benchSchema = func() *iceberg.Schema {
		var sc iceberg.Schema
		if err := json.Unmarshal([]byte(schemaJSON), &sc); err != nil {
			panic(err)
		}
		return &sc
	}()
	benchSpec = *iceberg.UnpartitionedSpec
)

// writeAppendFiles writes what an engine's fast append writes before it
// commits snapshot id on st: a manifest with one data file (written once
// per snapshot: a retry reuses it) and the manifest list of the parent's
// manifests followed by the new one (rewritten on every attempt). A
// parent whose list is not a file (the big table's fake history) counts
// as having no manifests.
func writeAppendFiles(st *tableState, id int64) (string, error) {
	dir, err := localPath(st.Metadata.Location + "/metadata")
	if err != nil {
		return "", err
	}
	manifestLoc := fmt.Sprintf("%s/metadata/bench-%d-m0.avro", st.Metadata.Location, id)
	manifestPath := filepath.Join(dir, fmt.Sprintf("bench-%d-m0.avro", id))
	var manifest iceberg.ManifestFile
	if fi, err := os.Stat(manifestPath); err == nil {
		manifest = iceberg.NewManifestFile(2, manifestLoc, fi.Size(), 0, id).AddedFiles(1).AddedRows(1000).Build()
	} else {
		df, err := iceberg.NewDataFileBuilder(benchSpec, iceberg.EntryContentData,
			fmt.Sprintf("%s/data/bench-%d.parquet", st.Metadata.Location, id), iceberg.ParquetFile, nil, nil, nil, 1000, 65536)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		manifest, err = iceberg.WriteManifest(manifestLoc, &buf, 2, benchSpec, benchSchema, id,
			[]iceberg.ManifestEntry{iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &id, nil, nil, df.Build())})
		if err != nil {
			return "", err
		}
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return "", err
		}
		if err := os.WriteFile(manifestPath, buf.Bytes(), 0o640); err != nil {
			return "", err
		}
	}
	var manifests []iceberg.ManifestFile
	if cur := st.Metadata.CurrentSnapshotID; cur != nil {
		for _, snap := range st.Metadata.Snapshots {
			if snap.ID != *cur {
				continue
			}
			p, err := localPath(snap.ManifestList)
			if err != nil {
				return "", err
			}
			data, err := os.ReadFile(p)
			if errors.Is(err, os.ErrNotExist) {
				break
			} else if err != nil {
				return "", err
			}
			if manifests, err = iceberg.ReadManifestList(bytes.NewReader(data)); err != nil {
				return "", err
			}
		}
	}
	seq := st.Metadata.LastSequenceNumber + 1
	var buf bytes.Buffer
	if err := iceberg.WriteManifestList(2, &buf, id, st.Metadata.CurrentSnapshotID, &seq, 0, append(manifests, manifest)); err != nil {
		return "", err
	}
	name := fmt.Sprintf("snap-%d-%d-bench.avro", id, seq)
	if err := os.WriteFile(filepath.Join(dir, name), buf.Bytes(), 0o640); err != nil {
		return "", err
	}
	return st.Metadata.Location + "/metadata/" + name, nil
}

func localPath(loc string) (string, error) {
	u, err := url.Parse(loc)
	if err != nil || u.Scheme != "file" {
		return "", fmt.Errorf("not a file URL: %q", loc)
	}
	return filepath.FromSlash(u.Path), nil
}

// appendCommitWithList is appendCommit with a real manifest list.
func appendCommitWithList(st *tableState, snapshotID int64, list string, now time.Time) []byte {
	body := string(appendCommit(st, snapshotID, now))
	return []byte(manifestListField.ReplaceAllString(body, `"manifest-list":"`+list+`"`))
}

var manifestListField = regexp.MustCompile(`"manifest-list":"[^"]*"`)

// storeMax raises v to n if n is larger.
func storeMax(v *atomic.Int64, n int64) {
	for {
		m := v.Load()
		if n <= m || v.CompareAndSwap(m, n) {
			return
		}
	}
}

// scrapeCounter reads one sample from /metrics; an absent series (a
// counter vector's child that was never touched) is 0.
func scrapeCounter(b *testing.B, s *benchServer, series string) float64 {
	b.Helper()
	for line := range strings.Lines(string(s.must(b, http.MethodGet, "/metrics", nil, http.StatusOK))) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatalf("metric %s: %v", series, err)
			}
			return f
		}
	}
	return 0
}

// bigTableSnapshots is the history of the big tables benchmarks load and
// append to.
const bigTableSnapshots = 1000

// metadataLogMax is write.metadata.previous-versions-max's default: a table
// committed to this often has a full metadata-log.
const metadataLogMax = 100

// BenchmarkLoadTable loads a table with 1,000 snapshots (a metadata file of
// about half a megabyte, metadata-log full at 100 entries), one client:
// full answers, 304s for a client revalidating with If-None-Match, and
// snapshots=refs.
func BenchmarkLoadTable(b *testing.B) {
	if testing.Short() {
		b.Skip("builds a table with 1,000 snapshots")
	}
	for _, mode := range []string{"full", "if-none-match", "snapshots=refs"} {
		b.Run(mode, func(b *testing.B) {
			s := startBenchServer(b, 1)
			s.must(b, http.MethodPost, "/v1/lake/namespaces", []byte(`{"namespace":["bench"]}`), http.StatusOK)
			path := buildBigTable(b, s, "big")
			if mode == "snapshots=refs" {
				path += "?snapshots=refs"
			}
			req, err := http.NewRequestWithContext(b.Context(), http.MethodGet, s.url+path, nil)
			if err != nil {
				b.Fatal(err)
			}
			res, err := s.client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			full, _ := io.ReadAll(res.Body)
			res.Body.Close()
			tag := res.Header.Get("ETag")
			if res.StatusCode != http.StatusOK || tag == "" {
				b.Fatalf("load: status %d, ETag %q", res.StatusCode, tag)
			}
			want := http.StatusOK
			var header []string
			if mode == "if-none-match" {
				want, header = http.StatusNotModified, []string{"If-None-Match", tag}
			}
			lat := make([]time.Duration, 0, 1024)
			var bytesRead int64
			cpu := startCPU()
			for b.Loop() {
				start := time.Now()
				status, data, err := s.call(b.Context(), http.MethodGet, path, nil, header...)
				lat = append(lat, time.Since(start))
				if err != nil {
					b.Fatal(err)
				}
				if status != want {
					b.Fatalf("load: status %d, want %d", status, want)
				}
				bytesRead += int64(len(data))
			}
			cpu.report(b, b.N)
			(&latencies{all: lat}).report(b)
			b.ReportMetric(float64(len(full))/1024, "body-KiB")
			if mode != "if-none-match" {
				b.SetBytes(bytesRead / int64(b.N))
			}
		})
	}
}

// buildBigTable creates bench.<name> with bigTableSnapshots appends, made in
// ten commits of a hundred, then ninety property commits so its
// metadata-log is full (100 entries) as a long-lived table's is. It returns
// the table's path.
func buildBigTable(b *testing.B, s *benchServer, name string) string {
	b.Helper()
	st := s.createTable(b, "bench", name)
	path := "/v1/lake/namespaces/bench/tables/" + name
	const perCommit = 100
	now := time.Now()
	for range bigTableSnapshots / perCommit {
		var sb strings.Builder
		sb.WriteString(`{"requirements":[],"updates":[`)
		parent, seq := st.Metadata.CurrentSnapshotID, st.Metadata.LastSequenceNumber
		for i := range perCommit {
			if i > 0 {
				sb.WriteByte(',')
			}
			id := newSnapshotID()
			seq++
			now = now.Add(time.Millisecond)
			writeSnapshotUpdates(&sb, st.Metadata.Location, parent, id, seq, now)
			parent = &id
		}
		sb.WriteString(`]}`)
		var err error
		if st, err = decodeState(s.must(b, http.MethodPost, path, []byte(sb.String()), http.StatusOK)); err != nil {
			b.Fatal(err)
		}
	}
	for i := range metadataLogMax - bigTableSnapshots/perCommit {
		st2, err := decodeState(s.must(b, http.MethodPost, path,
			[]byte(`{"requirements":[],"updates":[{"action":"set-properties","updates":{"bench.seq":"`+strconv.Itoa(i)+`"}}]}`), http.StatusOK))
		if err != nil {
			b.Fatal(err)
		}
		st = st2
	}
	if len(st.Metadata.Snapshots) != bigTableSnapshots || len(st.Metadata.MetadataLog) != metadataLogMax {
		b.Fatalf("big table has %d snapshots and %d metadata-log entries", len(st.Metadata.Snapshots), len(st.Metadata.MetadataLog))
	}
	return path
}
