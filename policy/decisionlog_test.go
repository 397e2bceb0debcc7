package policy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"sync"
	"testing"
	"time"
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
