package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/floe-catalog/floe/policy/authn"
)

// TestShutdownLogsEveryDecision sends SIGTERM to `floe serve` in the middle
// of a stream of authorized requests and keeps sending until connections
// are refused. Every request that got an answer, before the signal or while
// the server drained, must have exactly one line in the decision log: the
// policy engine and the log may only close once the HTTP server is done.
func TestShutdownLogsEveryDecision(t *testing.T) {
	dir := t.TempDir()
	token, err := authn.NewToken()
	if err != nil {
		t.Fatal(err)
	}
	tokens := fmt.Sprintf(`{"tokens":[{"sha256":%q,"principal":"reader","groups":[]}]}`, authn.HashSecret(token))
	tokenFile := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokenFile, []byte(tokens), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "decisions.jsonl")
	p := startServeWith(t, nil, "--addr", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"),
		"--warehouse", filepath.Join(dir, "warehouse"), "--auth-token-file", tokenFile,
		"--policy-decision-log", logPath, "--drain-delay", "300ms")

	// Each request reads main through the Nessie API: one decision each,
	// allowed for every authenticated principal by the default policy.
	var (
		mu       sync.Mutex
		answered = map[string]int{} // request id -> status
		// signalled is set just before SIGTERM; afterDrain counts the
		// answers that came after it.
		signalled  atomic.Bool
		afterDrain atomic.Int64
		started    = make(chan struct{})
		startOnce  sync.Once
		failures   = make(chan error, 4)
		wg         sync.WaitGroup
	)
	const workers = 4
	deadline := time.Now().Add(60 * time.Second)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 10 * time.Second}
			for i := 0; ; i++ {
				if time.Now().After(deadline) {
					failures <- errors.New("connections still accepted 60s after the test began")
					return
				}
				id := fmt.Sprintf("w%d-%d", w, i)
				req, err := http.NewRequest(http.MethodGet, "http://"+p.addr+"/api/v2/trees/main", nil)
				if err != nil {
					failures <- err
					return
				}
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("X-Request-Id", id)
				resp, err := client.Do(req)
				if errors.Is(err, syscall.ECONNREFUSED) {
					return // the listener is gone
				}
				if err != nil {
					continue // a connection closed by the shutdown; try again
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				answered[id] = resp.StatusCode
				n := len(answered)
				mu.Unlock()
				if signalled.Load() {
					afterDrain.Add(1)
				}
				if n >= 50 {
					startOnce.Do(func() { close(started) })
				}
			}
		}()
	}
	select {
	case <-started:
	case err := <-failures:
		t.Fatal(err)
	}
	signalled.Store(true)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(failures)
	for err := range failures {
		t.Fatal(err)
	}
	code, stderr := p.wait(t)
	if code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0; stderr:\n%s", code, strings.Join(stderr, "\n"))
	}
	if afterDrain.Load() == 0 {
		t.Fatal("no request was answered after SIGTERM, so draining was not exercised; raise --drain-delay")
	}

	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := map[string]int{} // request id -> decision log lines
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var d struct {
			Input struct {
				RequestID string `json:"request_id"`
			} `json:"input"`
		}
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("decision log line %q: %v", l, err)
		}
		lines[d.Input.RequestID]++
	}
	t.Logf("%d requests answered, %d of them after SIGTERM; %d decision log lines", len(answered), afterDrain.Load(), len(lines))
	missing := 0
	for id, status := range answered {
		if status != http.StatusOK {
			t.Errorf("request %s answered %d, want 200", id, status)
		}
		if n := lines[id]; n != 1 {
			missing++
			if missing <= 5 {
				t.Errorf("request %s was answered but has %d decision log lines, want 1", id, n)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d answered requests (%d of them after SIGTERM) lack exactly one decision log line",
			missing, len(answered), afterDrain.Load())
	}
}
