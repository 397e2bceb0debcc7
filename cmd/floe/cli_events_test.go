package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
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

	// Following: a tail started now prints the next change as it lands.
	cmd := exec.Command(floeBin, "events", "tail", "--types", "table.*")
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
	time.Sleep(500 * time.Millisecond) // the tail's cursor is "now" once it asked
	e.put("main", "add db.t2", "v1", "db.t2")
	select {
	case line := <-got:
		if !strings.Contains(line, "table.created") || !strings.Contains(line, "db.t2") {
			t.Fatalf("followed line: %q", line)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("events tail printed nothing within 20s")
	}
}
