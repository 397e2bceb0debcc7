package crashchild

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// startLimit bounds the wait for a child's first line.
const startLimit = time.Minute

// Run starts the current test binary running only the test named child,
// with env (a "NAME=value" entry) added to its environment so the child
// knows it is one, kills it with SIGKILL life after it printed its first
// line, and returns the lines it printed whole on stdout. A line the kill
// tore is dropped: the child never printed it, so the parent must not count
// on what it says. The child's stderr goes to the parent's.
//
// life counts from the first line, not from the start, because on a loaded
// machine starting a race-instrumented binary can take longer than life: a
// child killed before it did anything tests nothing. A child that prints
// nothing within startLimit is killed then.
func Run(t testing.TB, child, env string, life time.Duration) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.v")
	cmd.Env = append(os.Environ(), env)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	done := make(chan struct{})
	started := make(chan struct{})
	go func() {
		defer close(done)
		r := bufio.NewReader(out)
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return
			}
			if lines == nil {
				close(started)
			}
			lines = append(lines, strings.TrimSuffix(l, "\n"))
		}
	}()
	select {
	case <-started:
		time.Sleep(life)
	case <-done:
	case <-time.After(startLimit):
	}
	_ = cmd.Process.Kill()
	<-done
	_ = cmd.Wait()
	return lines
}
