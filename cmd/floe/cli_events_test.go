package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCLIEventsTail drives `floe events tail` against a real `floe
// serve`: the history from the beginning, filtered and as JSON, then
// following what happens next.
func TestCLIEventsTail(t *testing.T) {
	e := newCLIEnv(t)
	e.put("main", "create db.t1", "v1", "db", "db.t1")

	out := e.ok(t, "events", "tail", "--after", "0", "--follow=false")
	for _, want := range []string{"branch.created", "commit", "namespace.created", "table.created", "db.t1"} {
		if !strings.Contains(out, want) {
			t.Errorf("events tail from the beginning lacks %q:\n%s", want, out)
		}
	}
	out = e.ok(t, "events", "tail", "--after", "0", "--follow=false", "--types", "table.*", "--json")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var ev struct {
		ID, Type string
		Content  struct{ Key []string }
	}
	if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &ev) != nil || ev.Type != "table.created" || strings.Join(ev.Content.Key, ".") != "db.t1" {
		t.Fatalf("events tail --types table.* --json: %q", out)
	}
	e.fails(t, []string{"events", "tail", "--types", "tables"}, `"tables"`)

	// Following: a tail from the feed's last event prints the next change
	// as it lands. It starts from that cursor, not from "now", so it
	// cannot miss the change however late it first asks.
	all := strings.Split(strings.TrimSpace(e.ok(t, "events", "tail", "--after", "0", "--follow=false", "--json")), "\n")
	var last struct{ ID string }
	if err := json.Unmarshal([]byte(all[len(all)-1]), &last); err != nil || last.ID == "" {
		t.Fatalf("the feed's last event: %q (%v)", all[len(all)-1], err)
	}
	cmd := exec.Command(floeBin, "events", "tail", "--after", last.ID, "--types", "table.*")
	cmd.Env = append(os.Environ(), "FLOE_SERVER=http://"+e.addr)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		got <- line
	}()
	e.put("main", "add db.t2", "v1", "db.t2")
	select {
	case line := <-got:
		if !strings.Contains(line, "table.created") || !strings.Contains(line, "db.t2") {
			t.Fatalf("followed line: %q", line)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("events tail printed nothing within 2 minutes")
	}
}

// TestCLIEventWebhooks: `floe serve --event-webhooks FILE` delivers to a
// receiver that refuses everything; `floe events webhooks` shows the
// subscription dead-lettered, and `floe events resume --skip` puts it
// back to work.
func TestCLIEventWebhooks(t *testing.T) {
	var mu sync.Mutex
	var attempts int
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		attempts++
		mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer rcv.Close()
	dir := t.TempDir()
	hooks := filepath.Join(dir, "hooks.json")
	if err := os.WriteFile(hooks, []byte(`{"subscriptions": [{"name": "hook", "url": "`+rcv.URL+`", "secretEnv": "HOOK_SECRET",
		"principal": "svc", "start": "beginning", "backoff": "10ms", "maxAttempts": 2}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, []string{"HOOK_SECRET=s3cret"}, "--addr", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"),
		"--warehouse", filepath.Join(dir, "warehouse"), "--event-webhooks", hooks)
	e := &cliEnv{t: t, addr: p.addr, http: &http.Client{Timeout: 10 * time.Second}}
	deadline := time.Now().Add(30 * time.Second)
	var out string
	for {
		out = e.ok(t, "events", "webhooks")
		if strings.Contains(out, "dead-letter") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("floe events webhooks: %q", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !strings.Contains(out, "hook\tdead-letter\tcursor 0\t0 delivered") || !strings.Contains(out, "branch.created on main after 2 attempt(s)") ||
		!strings.Contains(out, "status 503") {
		t.Fatalf("floe events webhooks: %q", out)
	}
	mu.Lock()
	if attempts != 2 {
		t.Errorf("the receiver got %d attempts; want 2, then none while dead-lettered", attempts)
	}
	mu.Unlock()
	out = e.ok(t, "events", "resume", "hook", "--skip")
	if !strings.Contains(out, "hook\tactive\tcursor 1") {
		t.Fatalf("floe events resume --skip: %q", out)
	}
	e.fails(t, []string{"events", "resume", "hook"}, "not dead-lettered")
	e.fails(t, []string{"events", "resume", "nope"}, "no such webhook subscription")
}
