package policy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultDecisionLogBuffer is how many decision-log lines wait for the
// writer before a decision has to wait for room.
const DefaultDecisionLogBuffer = 4096

// decisionLogFullWait bounds how long a decision waits for room in a full
// buffer before its line is dropped (counted and logged).
const decisionLogFullWait = time.Second

// decisionLog writes one JSON line per decision, off the deciding
// goroutine: Decide may run on a branch's committer (a merge's write
// check), and a slow writer (a pipe, a network file system) must not stall
// every writer of that branch. Decide encodes the line (so the entry needs
// no copy of the caller's input) and queues it; one goroutine writes the
// queue in order, batching what has accumulated into one Write, so lines
// never interleave.
//
// A full queue means the writer has fallen DefaultDecisionLogBuffer lines
// behind. Decide then waits for room, up to fullWait or its context's end,
// rather than dropping at once; after that the line is dropped, counted in
// floe_policy_decision_log_dropped_total and its decision id logged, so
// the decision stands and the loss is visible. close flushes every queued
// line and stops the goroutine; a line logged after close is written on
// the caller's goroutine, so none is lost while the writer stays open.
type decisionLog struct {
	w        io.Writer
	log      *slog.Logger
	dropped  prometheus.Counter
	fullWait time.Duration

	// mu guards closed against sends on a closed queue: senders hold it
	// shared, close exclusively. A sender blocked on a full queue holds it
	// too, which is fine: the writer keeps draining until close closes it.
	mu     sync.RWMutex
	closed bool
	queue  chan logLine
	done   chan struct{}

	// writeMu serializes writes to w between the writer goroutine's last
	// batch and lines written after close.
	writeMu sync.Mutex
}

// logLine is one encoded line and the decision it records, for errors.
type logLine struct {
	id   string
	line []byte
}

func newDecisionLog(w io.Writer, size int, log *slog.Logger, dropped prometheus.Counter) *decisionLog {
	if size <= 0 {
		size = DefaultDecisionLogBuffer
	}
	l := &decisionLog{
		w: w, log: log, dropped: dropped, fullWait: decisionLogFullWait,
		queue: make(chan logLine, size), done: make(chan struct{}),
	}
	go l.run()
	return l
}

// DecisionLogEntry is one line of the decision log. Input carries no
// credentials by design (principals arrive already authenticated), so the
// log holds no secrets.
type DecisionLogEntry struct {
	DecisionID string         `json:"decision_id"`
	Time       time.Time      `json:"time"`
	Input      Input          `json:"input"`
	Result     DecisionResult `json:"result"`
	LatencyUS  float64        `json:"latency_us"`
	Revision   string         `json:"revision"`
	// Cached is true when the decision came from the engine's decision
	// cache rather than a fresh evaluation.
	Cached bool `json:"cached,omitempty"`
}

// DecisionResult is the logged outcome of a decision.
type DecisionResult struct {
	Allow   bool     `json:"allow"`
	Reasons []string `json:"reasons"`
}

// MarshalJSON fixes the time format to RFC 3339 with nanoseconds in UTC,
// whatever the local zone.
func (e DecisionLogEntry) MarshalJSON() ([]byte, error) {
	type plain DecisionLogEntry
	return json.Marshal(struct {
		plain
		Time string `json:"time"`
	}{plain(e), e.Time.UTC().Format(time.RFC3339Nano)})
}

// write queues e's line. Errors are encoding failures and lines dropped
// from a full queue; write failures are logged by the writer goroutine.
func (l *decisionLog) write(ctx context.Context, e *DecisionLogEntry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode decision log entry %s: %w", e.DecisionID, err)
	}
	ll := logLine{id: e.DecisionID, line: append(line, '\n')}
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.closed {
		return l.writeLines(ll.line, ll.id, 1)
	}
	select {
	case l.queue <- ll:
		return nil
	default:
	}
	// Full: wait a little for the writer rather than drop at once.
	t := time.NewTimer(l.fullWait)
	defer t.Stop()
	select {
	case l.queue <- ll:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	l.dropped.Inc()
	return fmt.Errorf("decision log entry %s dropped: %d lines wait for a slow writer", e.DecisionID, cap(l.queue))
}

// run writes queued lines until close, batching the lines that wait into
// one Write.
func (l *decisionLog) run() {
	defer close(l.done)
	var batch []byte
	for ll := range l.queue {
		batch = append(batch[:0], ll.line...)
		n := 1
	more:
		for len(batch) < 64<<10 {
			select {
			case next, ok := <-l.queue:
				if !ok {
					break more
				}
				batch = append(batch, next.line...)
				n++
			default:
				break more
			}
		}
		if err := l.writeLines(batch, ll.id, n); err != nil {
			// The decisions stand; losing log lines must not turn
			// answers into an outage.
			l.log.Error("decision log write failed", "first_decision_id", ll.id, "lines", n, "err", err)
		}
		if cap(batch) > 1<<20 {
			batch = nil // one burst does not pin a large buffer
		}
	}
}

func (l *decisionLog) writeLines(b []byte, firstID string, n int) error {
	l.writeMu.Lock()
	defer l.writeMu.Unlock()
	if _, err := l.w.Write(b); err != nil {
		return fmt.Errorf("write %d decision log lines from %s: %w", n, firstID, err)
	}
	return nil
}

// close writes every queued line and stops the writer goroutine. It is
// idempotent.
func (l *decisionLog) close() {
	l.mu.Lock()
	if !l.closed {
		l.closed = true
		close(l.queue)
	}
	l.mu.Unlock()
	<-l.done
}
