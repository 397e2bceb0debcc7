package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/benchhttp"
)

// Stats are the timings of one step.
type Stats = benchhttp.Stats

// Table names one table and its UUID.
type Table struct {
	NS, Name, UUID string
}

// forDuration runs op from clients concurrent clients until d has passed
// (or n ops per client when n > 0, for warm-ups), timing each op. The
// first error stops every client and is returned.
func forDuration(ctx context.Context, clients int, d time.Duration, n int, op func(ctx context.Context, w, i int) error) (Stats, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(d)
	for w := range clients {
		wg.Go(func() {
			for i := 0; ; i++ {
				if ctx.Err() != nil || (n > 0 && i >= n) || (n == 0 && !time.Now().Before(deadline)) {
					return
				}
				t0 := time.Now()
				if err := op(ctx, w, i); errors.Is(err, errSkip) {
					continue
				} else if err != nil {
					cancel(fmt.Errorf("client %d, op %d: %w", w, i, err))
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
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

// PropertyCommits: client w sets a new property value on tables[w],
// asserting its UUID, once per op.
func PropertyCommits(ctx context.Context, c *Client, tables []Table, clients int, d time.Duration, n int) (Stats, error) {
	if len(tables) < clients {
		return Stats{}, fmt.Errorf("%d tables for %d clients", len(tables), clients)
	}
	tag := randomID()
	return forDuration(ctx, clients, d, n, func(ctx context.Context, w, i int) error {
		t := tables[w]
		req, upd := SetProperties(t.UUID, map[string]string{"peerbench.value": fmt.Sprintf("%d-%d", tag, i)})
		return c.CommitOnly(ctx, t.NS, t.Name, req, upd)
	})
}

// Loads: every client loads table t once per op.
func Loads(ctx context.Context, c *Client, t Table, clients int, d time.Duration, n int) (Stats, error) {
	return forDuration(ctx, clients, d, n, func(ctx context.Context, _, _ int) error {
		uuid, err := c.LoadTableUUID(ctx, t.NS, t.Name)
		if err == nil && uuid != t.UUID {
			err = fmt.Errorf("loaded table %s.%s with UUID %q, want %q", t.NS, t.Name, uuid, t.UUID)
		}
		return err
	})
}

// MaxRetries is how often an append is retried after a 409 before the
// client gives up on it, as Iceberg's Java client does by default
// (commit.retry.num-retries = 4).
const MaxRetries = 4

// AppendResult is the outcome of one hot-table append step.
type AppendResult struct {
	Stats               // acknowledged appends, each timed from its first attempt to its acknowledgement
	FirstAttempt int    // appends acknowledged on their first attempt
	Retries      int    // attempts after a 409
	Failed       int    // appends given up after MaxRetries retries
	Errors       int    // answers other than 200 and 409 (the append's fate unknown)
	FirstError   string // the first of those
	Acked        []Append
	Loss         LossReport
}

// HotAppends: clients append to table t concurrently, each append a new
// snapshot on main's current one: the client writes the snapshot's
// manifest list (a real, empty Avro manifest list) under the table's
// location with st, then commits add-snapshot and set-snapshot-ref main
// asserting main's snapshot (assert-ref-snapshot-id). On 409 it reloads
// the table and retries with a new snapshot, up to MaxRetries times.
// After the step it reloads the table and checks that no acknowledged
// append was lost.
func HotAppends(ctx context.Context, c *Client, st *Storage, t Table, clients int, d time.Duration) (AppendResult, error) {
	start, err := c.LoadTable(ctx, t.NS, t.Name)
	if err != nil {
		return AppendResult{}, err
	}
	var (
		mu       sync.Mutex
		res      AppendResult
		firstOK  atomic.Int64
		retries  atomic.Int64
		failed   atomic.Int64
		errCount atomic.Int64
	)
	const maxErrors = 50
	stats, err := forDuration(ctx, clients, d, 0, func(ctx context.Context, w, i int) error {
		md, err := c.LoadTable(ctx, t.NS, t.Name)
		if err != nil {
			return err
		}
		for attempt := 0; ; attempt++ {
			a, err := appendOnce(ctx, c, st, t, md)
			if err == nil {
				if attempt == 0 {
					firstOK.Add(1)
				}
				mu.Lock()
				res.Acked = append(res.Acked, a)
				mu.Unlock()
				return nil
			}
			if !benchhttp.IsConflict(err) {
				if errCount.Add(1) > maxErrors {
					return fmt.Errorf("more than %d failed appends, the last: %w", maxErrors, err)
				}
				mu.Lock()
				if res.FirstError == "" {
					res.FirstError = err.Error()
				}
				mu.Unlock()
				return errSkip
			}
			if attempt == MaxRetries {
				failed.Add(1)
				return errSkip
			}
			retries.Add(1)
			if md, err = c.LoadTable(ctx, t.NS, t.Name); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return AppendResult{}, err
	}
	res.Stats = stats
	res.FirstAttempt, res.Retries, res.Failed, res.Errors = int(firstOK.Load()), int(retries.Load()), int(failed.Load()), int(errCount.Load())
	final, err := c.LoadTable(ctx, t.NS, t.Name)
	if err != nil {
		return AppendResult{}, fmt.Errorf("loading %s.%s after the appends: %w", t.NS, t.Name, err)
	}
	res.Loss = CheckAppends(start.Main(), start.LastSequenceNumber, res.Acked, final)
	return res, nil
}

// errSkip marks an op that ended without an acknowledgement and without
// stopping the step: forDuration neither times nor counts it.
var errSkip = errors.New("append not acknowledged")

// appendOnce writes one snapshot's manifest list and commits it on top of
// main as md has it.
func appendOnce(ctx context.Context, c *Client, st *Storage, t Table, md Metadata) (Append, error) {
	parent := md.Main()
	s := newSnapshot(md, parent, md.LastSequenceNumber+1)
	data, err := ManifestList(s.ID, parent, s.SequenceNumber)
	if err != nil {
		return Append{}, err
	}
	if err := st.Put(ctx, s.ManifestList, data); err != nil {
		return Append{}, err
	}
	req, upd := AppendSnapshots(parent, s)
	if err := c.CommitOnly(ctx, t.NS, t.Name, req, upd); err != nil {
		return Append{}, err
	}
	return Append{ID: s.ID, Parent: parent, Seq: s.SequenceNumber}, nil
}

func newSnapshot(md Metadata, parent *int64, seq int64) Snapshot {
	id := randomID()
	return Snapshot{
		ID: id, ParentID: parent, SequenceNumber: seq, TimestampMs: time.Now().UnixMilli(),
		ManifestList: fmt.Sprintf("%s/metadata/snap-%d-peerbench.avro", strings.TrimRight(md.Location, "/"), id),
		Summary:      map[string]string{"operation": "append"}, SchemaID: 0,
	}
}

// randomID is a positive random 63-bit snapshot id, as Java's are.
func randomID() int64 { return rand.Int64N(1<<62) + 1 }

// AddSnapshots grows table t by n snapshots on main, batch per commit
// (one commit per snapshot if the server refuses batches), writing each
// snapshot's manifest list. It is setup, not timed.
func AddSnapshots(ctx context.Context, c *Client, st *Storage, t Table, n, batch int) error {
	md, err := c.LoadTable(ctx, t.NS, t.Name)
	if err != nil {
		return err
	}
	for added := 0; added < n; {
		k := min(batch, n-added)
		parent := md.Main()
		first := parent
		snaps := make([]Snapshot, 0, k)
		for j := range k {
			s := newSnapshot(md, parent, md.LastSequenceNumber+1+int64(j))
			data, err := ManifestList(s.ID, parent, s.SequenceNumber)
			if err != nil {
				return err
			}
			if err := st.Put(ctx, s.ManifestList, data); err != nil {
				return err
			}
			snaps = append(snaps, s)
			id := s.ID
			parent = &id
		}
		req, upd := AppendSnapshots(first, snaps...)
		next, err := c.Commit(ctx, t.NS, t.Name, req, upd)
		if err != nil {
			if batch > 1 && !benchhttp.IsConflict(err) {
				return AddSnapshots(ctx, c, st, t, n-added, 1)
			}
			return fmt.Errorf("adding snapshots %d..%d to %s.%s: %w", added, added+k, t.NS, t.Name, err)
		}
		md = next
		added += k
	}
	return nil
}
