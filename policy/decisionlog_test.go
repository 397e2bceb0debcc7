package policy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// lockedBuffer lets the test read what concurrent decisions wrote.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) lines(t *testing.T) []map[string]json.RawMessage {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	for sc.Scan() {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("decision log line %q is not JSON: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

func TestDecisionLog(t *testing.T) {
	var buf lockedBuffer
	e := newTestEngine(t, Options{DecisionLog: &buf})
	in := withContents(op(principal("alice", "analysts"), ActionCommit, branchRef("users/alice/x")), []string{"finance", "ledger"})
	in.RequestID = "req-42"
	before := time.Now()
	d, err := e.Decide(t.Context(), in)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil { // writes the queued line
		t.Fatal(err)
	}
	lines := buf.lines(t)
	if len(lines) != 1 {
		t.Fatalf("got %d log lines, want 1", len(lines))
	}
	line := lines[0]
	for _, k := range []string{"decision_id", "time", "input", "result", "latency_us", "revision"} {
		if _, ok := line[k]; !ok {
			t.Errorf("log line lacks %q", k)
		}
	}
	if len(line) != 6 {
		t.Errorf("log line has %d keys, want 6: %v", len(line), line)
	}
	var id, ts, rev string
	var latency float64
	var result struct {
		Allow   bool     `json:"allow"`
		Reasons []string `json:"reasons"`
	}
	var loggedInput Input
	for k, v := range map[string]any{"decision_id": &id, "time": &ts, "revision": &rev, "latency_us": &latency, "result": &result, "input": &loggedInput} {
		if err := json.Unmarshal(line[k], v); err != nil {
			t.Fatalf("decode %s: %v", k, err)
		}
	}
	if id != d.ID {
		t.Errorf("decision_id = %q, want %q", id, d.ID)
	}
	logged, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		t.Errorf("time %q is not RFC 3339: %v", ts, err)
	} else if logged.Before(before.Add(-time.Second)) || logged.After(time.Now().Add(time.Second)) {
		t.Errorf("time %v is not around the decision (%v)", logged, before)
	}
	if rev != "default-1" {
		t.Errorf("revision = %q", rev)
	}
	if latency <= 0 {
		t.Errorf("latency_us = %v, want > 0", latency)
	}
	if result.Allow != d.Allow || len(result.Reasons) != 1 || result.Reasons[0] != "write to finance.ledger requires group finance" {
		t.Errorf("result = %+v, decision = %+v", result, d)
	}
	want, _ := json.Marshal(in)
	if !bytes.Equal(line["input"], want) {
		t.Errorf("input = %s, want %s", line["input"], want)
	}
}

func TestDecisionLogConcurrent(t *testing.T) {
	var buf lockedBuffer
	e := newTestEngine(t, Options{DecisionLog: &buf})
	const n = 64
	var wg sync.WaitGroup
	ids := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			a := ActionRead
			if i%2 == 1 {
				a = ActionCommit
			}
			d, err := e.Decide(t.Context(), op(principal("alice"), a, branchRef("users/alice/x")))
			if err != nil {
				t.Error(err)
				return
			}
			ids <- d.ID
		})
	}
	wg.Wait()
	close(ids)
	_ = e.Close()
	lines := buf.lines(t)
	if len(lines) != n {
		t.Fatalf("got %d log lines, want %d", len(lines), n)
	}
	logged := map[string]bool{}
	for _, l := range lines {
		var id string
		_ = json.Unmarshal(l["decision_id"], &id)
		logged[id] = true
	}
	for id := range ids {
		if !logged[id] {
			t.Errorf("decision %s not logged", id)
		}
	}
}

// gatedWriter blocks every Write until release is closed, as a writer to
// a stalled pipe or network file system does.
type gatedWriter struct {
	release chan struct{}
	entered chan struct{} // closed at the first Write
	once    sync.Once
	lockedBuffer
}

func newGatedWriter() *gatedWriter {
	return &gatedWriter{release: make(chan struct{}), entered: make(chan struct{})}
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	g.once.Do(func() { close(g.entered) })
	<-g.release
	return g.lockedBuffer.Write(p)
}

// loggedIDs is the set of decision ids in the log.
func loggedIDs(t *testing.T, b *lockedBuffer) map[string]bool {
	t.Helper()
	ids := map[string]bool{}
	for _, l := range b.lines(t) {
		var id string
		if err := json.Unmarshal(l["decision_id"], &id); err != nil {
			t.Fatal(err)
		}
		if ids[id] {
			t.Errorf("decision %s logged twice", id)
		}
		ids[id] = true
	}
	return ids
}

// TestDecisionLogSlowWriter: decisions do not wait for a writer that is
// stuck, while the buffer has room, and Close writes every line of a
// decision made before it, once.
func TestDecisionLogSlowWriter(t *testing.T) {
	w := newGatedWriter()
	const n = 200
	e := newTestEngine(t, Options{DecisionLog: w, DecisionLogBuffer: n})
	var ids []string
	for i := range n {
		// If Decide wrote the line itself, the first call would block on
		// the gate, which opens only after all n decisions returned.
		d, err := e.Decide(t.Context(), op(principal(fmt.Sprintf("p%d", i)), ActionRead, branchRef("main")))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	<-w.entered // the writer goroutine holds a line, the rest wait
	close(w.release)
	_ = e.Close()
	_ = e.Close() // idempotent
	logged := loggedIDs(t, &w.lockedBuffer)
	if len(logged) != n {
		t.Errorf("%d lines logged, want %d", len(logged), n)
	}
	for _, id := range ids {
		if !logged[id] {
			t.Errorf("decision %s made before Close is not in the log", id)
		}
	}
	// A decision after Close is still logged, by its caller.
	d, err := e.Decide(t.Context(), op(principal("late"), ActionRead, branchRef("main")))
	if err != nil {
		t.Fatal(err)
	}
	if !loggedIDs(t, &w.lockedBuffer)[d.ID] {
		t.Error("a decision after Close is not logged")
	}
}

// TestDecisionLogFlushOnCloseConcurrent: decisions from many goroutines,
// with Close racing the last of them, are all logged by the time Close
// returns (run with -race).
func TestDecisionLogFlushOnCloseConcurrent(t *testing.T) {
	var buf lockedBuffer
	e := newTestEngine(t, Options{DecisionLog: &buf, DecisionLogBuffer: 8})
	const workers, each = 8, 50
	var wg sync.WaitGroup
	idc := make(chan string, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				in := op(principal(fmt.Sprintf("w%d", w)), ActionCommit, branchRef(fmt.Sprintf("users/w%d/%d", w, i)))
				d, err := e.Decide(t.Context(), in)
				if err != nil {
					t.Error(err)
					return
				}
				idc <- d.ID
			}
		})
	}
	wg.Wait()
	_ = e.Close()
	close(idc)
	logged := loggedIDs(t, &buf)
	count := 0
	for id := range idc {
		count++
		if !logged[id] {
			t.Errorf("decision %s not logged", id)
		}
	}
	if count != workers*each || len(logged) != count {
		t.Errorf("%d decisions, %d lines; want %d of each", count, len(logged), workers*each)
	}
}

// TestDecisionLogFullBuffer: when the writer stays stuck behind a full
// buffer, a decision waits a little, then its line is dropped and
// counted; the decision itself stands.
func TestDecisionLogFullBuffer(t *testing.T) {
	w := newGatedWriter()
	reg := prometheus.NewRegistry()
	e := newTestEngine(t, Options{DecisionLog: w, DecisionLogBuffer: 1, Metrics: reg})
	e.dlog.fullWait = time.Millisecond
	const n = 6
	for i := range n {
		d, err := e.Decide(t.Context(), op(principal(fmt.Sprintf("p%d", i)), ActionRead, branchRef("main")))
		if err != nil || !d.Allow {
			t.Fatalf("decision %d: %+v %v; a full log must not change it", i, d, err)
		}
		if i == 0 {
			// The writer goroutine holds the first line, blocked; it
			// takes no more, so the queue takes one and the rest drop.
			<-w.entered
		}
	}
	dropped := metricValue(t, reg, "floe_policy_decision_log_dropped_total", nil)
	if dropped != n-2 {
		t.Errorf("dropped %v lines, want %d", dropped, n-2)
	}
	close(w.release)
	_ = e.Close()
	if got := len(loggedIDs(t, &w.lockedBuffer)); float64(got)+dropped != n {
		t.Errorf("%d lines logged and %v dropped, want %d in all", got, dropped, n)
	}
}
