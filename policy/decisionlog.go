package policy

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// decisionLog writes one JSON line per decision. Lines from concurrent
// decisions must not interleave, hence the mutex around each write.
type decisionLog struct {
	mu sync.Mutex
	w  io.Writer
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

func (l *decisionLog) write(e *DecisionLogEntry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode decision log entry %s: %w", e.DecisionID, err)
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.w.Write(line); err != nil {
		return fmt.Errorf("write decision log entry %s: %w", e.DecisionID, err)
	}
	return nil
}
