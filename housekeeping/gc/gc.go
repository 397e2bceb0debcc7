package gc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// DefaultGrace is how old an unreferenced file must be before a run
// deletes it: long enough that no write in flight (files written, commit
// not yet made) is ever caught.
const DefaultGrace = 3 * 24 * time.Hour

// DefaultWorkers is how many metadata files and manifests a run reads at
// once.
const DefaultWorkers = 8

// HistoryRule says how much of a reference's history keeps its files
// live: the head always, plus the commits along first parents that are
// among the Commits newest or younger than Age (either keeps a commit, as
// Iceberg combines min-snapshots-to-keep and max-snapshot-age-ms). A zero
// field keeps nothing by itself; the zero rule keeps the whole history
// (every ancestor, through every parent of merges).
type HistoryRule struct {
	Commits int
	Age     time.Duration
}

// keepsAll reports whether the rule keeps the whole history.
func (r HistoryRule) keepsAll() bool { return r.Commits <= 0 && r.Age <= 0 }

// Options configure a Collector.
type Options struct {
	Store      *versionstore.Store
	Warehouses icebergtable.Warehouses
	// History gives each reference's history rule; nil keeps the whole
	// history of every reference (the safe default).
	History func(ctx context.Context, ref *versionstore.Ref) (HistoryRule, error)
	// Grace is DefaultGrace when 0.
	Grace time.Duration
	// Workers bounds concurrent reads of metadata files and manifests;
	// DefaultWorkers when 0.
	Workers int
	// TempDir is where a run's mark database goes; os.TempDir() when "".
	TempDir string
	// Exclude are local directories never swept even if they lie inside a
	// warehouse (the version store's data directory).
	Exclude []string
	// ReportFile, when set, is where each real run's report is written
	// as JSON too (the store record is always written).
	ReportFile string
	Logger     *slog.Logger
	// Metrics registers the floe_gc_* metrics; nil registers none.
	Metrics prometheus.Registerer
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	// hooks for tests (export_test.go).
	afterMark    func()
	beforeBatch  func(n int) error
	beforeDelete func()
	batchSize    int
}

// Collector runs garbage collection, one run at a time.
type Collector struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics
	running atomic.Bool
	exclude []string
	// reportMu orders the end of runs: a run clears running and saves its
	// report under it, so a run started the moment the flag clears saves
	// after, and a visible report means another run may start.
	reportMu sync.Mutex

	// base ends every run when the collector closes; background runs
	// (Start, Schedule) are tracked by wg.
	base  context.Context
	close context.CancelFunc
	wg    sync.WaitGroup
}

// ErrRunning is returned when a run is asked for while one is going on.
var ErrRunning = errors.New("a garbage collection is already running")

// New returns a collector over opts.
func New(opts Options) (*Collector, error) {
	if opts.Store == nil {
		return nil, errors.New("gc: no version store")
	}
	if len(opts.Warehouses) == 0 {
		return nil, errors.New("gc: no warehouse")
	}
	if opts.Grace < 0 {
		return nil, fmt.Errorf("gc: negative grace period %s", opts.Grace)
	}
	if opts.Grace == 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.batchSize <= 0 {
		opts.batchSize = 1000
	}
	c := &Collector{opts: opts, log: opts.Logger}
	c.base, c.close = context.WithCancel(context.Background())
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(opts.Metrics)
	if err != nil {
		return nil, err
	}
	c.metrics = m
	for _, d := range opts.Exclude {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("gc: exclude %s: %w", d, err)
		}
		c.exclude = append(c.exclude, "file://"+filepath.ToSlash(filepath.Clean(abs)))
	}
	return c, nil
}

// Grace is the collector's default grace period.
func (c *Collector) Grace() time.Duration { return c.opts.Grace }

// RunOptions are one run's choices.
type RunOptions struct {
	// DryRun reports what would be deleted and deletes nothing.
	DryRun bool
	// Grace overrides the collector's grace period when positive. A
	// grace shorter than the longest write (files written, commit not
	// yet made) can delete that write's files.
	Grace time.Duration
	// Explain lists locations whose verdict the report explains.
	Explain []string
	// ListFiles is how many of the files deleted (or to delete) the report
	// lists by name; 0 lists none.
	ListFiles int
	// Principal names who asked, for the report.
	Principal string
}

// Run marks and sweeps once. It fails with ErrRunning when a run is going
// on. A failed or cancelled run has deleted only files nothing marked; its
// report (returned with the error when the run got that far) says so.
func (c *Collector) Run(ctx context.Context, ro RunOptions) (*Report, error) {
	if !c.running.CompareAndSwap(false, true) {
		return nil, ErrRunning
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(c.base, stop)()
	return c.runOnce(ctx, ro, c.opts.Now())
}

// Result is the end of a run Start began.
type Result struct {
	Report *Report
	Err    error
}

// Start begins a run in the background, ended only by Close, and returns
// its id (the ID of its report) and where its result will arrive. It
// fails with ErrRunning when a run is going on.
func (c *Collector) Start(ro RunOptions) (string, <-chan Result, error) {
	if !c.running.CompareAndSwap(false, true) {
		return "", nil, ErrRunning
	}
	if c.base.Err() != nil {
		c.running.Store(false)
		return "", nil, fmt.Errorf("gc: %w", c.base.Err())
	}
	start := c.opts.Now()
	out := make(chan Result, 1)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		rep, err := c.runOnce(c.base, ro, start)
		out <- Result{Report: rep, Err: err}
	}()
	return reportID(start), out, nil
}

// Schedule runs a collection every interval until ctx ends or the
// collector closes; a run still going on when the next is due is not
// doubled (that tick is skipped).
func (c *Collector) Schedule(ctx context.Context, interval time.Duration) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	defer context.AfterFunc(c.base, stop)()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := c.Run(ctx, RunOptions{Principal: "schedule"})
		if errors.Is(err, ErrRunning) {
			c.log.Info("gc: scheduled run skipped: a run is going on")
		} else if err != nil && ctx.Err() == nil {
			c.log.Error("gc: scheduled run failed", "error", err)
		}
	}
}

// Close ends the run going on, if any, and waits for background runs to
// stop. Runs asked for afterwards fail.
func (c *Collector) Close() error {
	c.close()
	c.wg.Wait()
	return nil
}

// Running reports whether a run is going on.
func (c *Collector) Running() bool { return c.running.Load() }

func reportID(start time.Time) string { return start.UTC().Format("20060102T150405.000000000Z") }

// runOnce does the run its caller claimed by setting running, and clears it.
func (c *Collector) runOnce(ctx context.Context, ro RunOptions, start time.Time) (*Report, error) {
	grace := c.opts.Grace
	if ro.Grace > 0 {
		grace = ro.Grace
	}
	rep := &Report{
		ID: reportID(start), Started: start.UTC(), DryRun: ro.DryRun,
		Grace: grace.String(), Principal: ro.Principal,
	}
	err := c.run(ctx, ro, grace, rep)
	rep.Finished = c.opts.Now().UTC()
	rep.DurationSeconds = rep.Finished.Sub(rep.Started).Seconds()
	switch {
	case err == nil:
		rep.Outcome = OutcomeOK
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		rep.Outcome, rep.Error = OutcomeCanceled, err.Error()
	default:
		rep.Outcome, rep.Error = OutcomeError, err.Error()
	}
	c.metrics.observe(rep)
	c.reportMu.Lock()
	c.running.Store(false)
	if serr := c.saveReport(context.WithoutCancel(ctx), rep); serr != nil {
		c.log.Error("gc: keeping the report failed", "error", serr)
	}
	c.reportMu.Unlock()
	c.log.Info("gc run finished", "dry_run", ro.DryRun, "outcome", rep.Outcome, "marked", rep.Marked,
		"deleted", rep.Deleted, "bytes", rep.DeletedBytes, "duration", rep.Finished.Sub(rep.Started), "error", rep.Error)
	return rep, err
}

func (c *Collector) run(ctx context.Context, ro RunOptions, grace time.Duration, rep *Report) error {
	m, err := openMarks(c.opts.TempDir)
	if err != nil {
		return err
	}
	defer func() {
		if err := m.close(); err != nil {
			c.log.Warn("gc: removing the mark database failed", "dir", m.dir, "error", err)
		}
	}()
	mk := newMarker(c, m, rep)
	begin := c.opts.Now()
	if err := mk.markUntilStable(ctx); err != nil {
		return fmt.Errorf("mark: %w", err)
	}
	rep.MarkSeconds = c.opts.Now().Sub(begin).Seconds()
	if c.opts.afterMark != nil {
		c.opts.afterMark()
	}
	sw := &sweeper{c: c, mk: mk, rep: rep, dryRun: ro.DryRun, cutoff: c.opts.Now().Add(-grace),
		listFiles: ro.ListFiles, explain: map[string]string{}}
	for _, e := range ro.Explain {
		sw.explain[canonical(e)] = e
	}
	if err := sw.sweep(ctx); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

// excluded reports whether a canonical location lies in an excluded
// directory.
func (c *Collector) excluded(canon string) bool {
	for _, d := range c.exclude {
		if strings.HasPrefix(canon, d+"/") {
			return true
		}
	}
	return false
}
