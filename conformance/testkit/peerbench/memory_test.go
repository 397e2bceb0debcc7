package peerbench_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkCommitMemory measures the memory of a separate bin/floe
// process (FLOE_BIN; skipped without it) while 64 clients commit to 64
// distinct Iceberg tables through the Iceberg REST API, b.N commits in
// all, each writing a new metadata file that the next one reads: the load
// of issue 16's defect 6. It reports the process's peak resident set
// (VmHWM) as peak-rss-MB. FLOE_SERVE_ARGS adds flags to floe serve, e.g.
// "--metadata-cache-bytes 16777216"; FLOE_SERVE_LOG names a file for its
// log.
//
//	make build && FLOE_BIN=$PWD/bin/floe go test -run '^$' -bench CommitMemory -benchtime 2000x ./conformance/testkit/peerbench/
func BenchmarkCommitMemory(b *testing.B) {
	bin := os.Getenv("FLOE_BIN")
	if bin == "" {
		b.Skip("FLOE_BIN is not set: make build, then FLOE_BIN=$PWD/bin/floe")
	}
	const clients = 64
	base, pid := startFloeProcess(b, bin, strings.Fields(os.Getenv("FLOE_SERVE_ARGS"))...)
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	post := func(ctx context.Context, path, body string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		data, _ := io.ReadAll(res.Body)
		if res.StatusCode >= 300 {
			return fmt.Errorf("POST %s: %d %s", path, res.StatusCode, data)
		}
		return nil
	}
	ctx := b.Context()
	if err := post(ctx, "/v1/lake/namespaces", `{"namespace":["mem"]}`); err != nil {
		b.Fatal(err)
	}
	const schema = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true},{"id":2,"name":"payload","type":"string","required":false}]}`
	for c := range clients {
		if err := post(ctx, "/v1/lake/namespaces/mem/tables", fmt.Sprintf(`{"name":"t%d","schema":%s}`, c, schema)); err != nil {
			b.Fatal(err)
		}
	}
	startRSS := vmKB(b, pid, "VmRSS")
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for c := range clients {
		wg.Go(func() {
			for i := 0; next.Add(1) <= int64(b.N); i++ {
				// A property per commit: the metadata file grows with
				// its log, as a table under steady appends does.
				body := fmt.Sprintf(`{"requirements":[],"updates":[{"action":"set-properties","updates":{"commit.%d":"%s"}}]}`, i%50, strings.Repeat("x", 200))
				if err := post(ctx, fmt.Sprintf("/v1/lake/namespaces/mem/tables/t%d", c), body); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(vmKB(b, pid, "VmHWM"))/1024, "peak-rss-MB")
	b.ReportMetric(float64(vmKB(b, pid, "VmRSS"))/1024, "end-rss-MB")
	b.ReportMetric(float64(startRSS)/1024, "start-rss-MB")
}

// startFloeProcess runs bin serve --dev on a free loopback port over a
// temporary store and warehouse, stopped (SIGINT) when the benchmark ends,
// and returns its base URL and process id.
func startFloeProcess(b *testing.B, bin string, extra ...string) (string, int) {
	b.Helper()
	dir := b.TempDir()
	args := append([]string{"serve", "--dev", "--addr", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"),
		"--warehouse", filepath.Join(dir, "warehouse")}, extra...)
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
		}
	})
	addr := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`listening addr=([0-9.:]+)`)
		var logw io.Writer = io.Discard
		if name := os.Getenv("FLOE_SERVE_LOG"); name != "" { // floe's stderr, e.g. with GODEBUG=gctrace=1
			if f, err := os.Create(name); err == nil {
				defer f.Close()
				logw = f
			}
		}
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(logw, sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addr <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-addr:
		return "http://" + a, cmd.Process.Pid
	case <-time.After(30 * time.Second):
		b.Fatal("floe did not report its address within 30s")
		return "", 0
	}
}

// vmKB reads a kB field (VmRSS, VmHWM) of /proc/<pid>/status.
func vmKB(b *testing.B, pid int, field string) int64 {
	b.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte(field+":")); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(v)), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
