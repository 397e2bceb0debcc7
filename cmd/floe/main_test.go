package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// floeBin is the real binary, built once by TestMain.
var floeBin string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "floe-bin-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	goTool, err := exec.LookPath("go")
	if err != nil {
		panic("the go tool is needed to build the binary under test: " + err.Error())
	}
	floeBin = filepath.Join(dir, "floe")
	build := exec.Command(goTool, "build", "-o", floeBin, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		panic("go build: " + err.Error())
	}
	return m.Run()
}

// floeProcess is one running `floe serve`.
type floeProcess struct {
	cmd    *exec.Cmd
	addr   string
	stderr chan []string // all stderr lines, once the process closed it
}

// startServe runs `floe serve --dev` with JSON logs and waits for its
// listening line to learn the bound address.
func startServe(t *testing.T, env []string, args ...string) *floeProcess {
	t.Helper()
	return startServeWith(t, env, append([]string{"--dev"}, args...)...)
}

// startServeWith is startServe without --dev: args say how callers
// authenticate.
func startServeWith(t *testing.T, env []string, args ...string) *floeProcess {
	t.Helper()
	cmd := exec.Command(floeBin, append([]string{"serve", "--log-format", "json"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &floeProcess{cmd: cmd, stderr: make(chan []string, 1)}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})

	addrs := make(chan string, 1)
	go func() {
		var lines []string
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			var l struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "listening" {
				addrs <- l.Addr
			}
		}
		p.stderr <- lines
	}()
	select {
	case p.addr = <-addrs:
	case lines := <-p.stderr:
		t.Fatalf("floe serve exited before listening; stderr:\n%s", strings.Join(lines, "\n"))
	case <-time.After(30 * time.Second):
		t.Fatal("floe serve did not log a listening address within 30s")
	}
	return p
}

// interrupt sends SIGINT and returns the exit code and stderr.
func (p *floeProcess) interrupt(t *testing.T) (int, []string) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	return p.wait(t)
}

// wait waits for the process to exit and returns the exit code and stderr.
func (p *floeProcess) wait(t *testing.T) (int, []string) {
	t.Helper()
	var lines []string
	select {
	case lines = <-p.stderr:
	case <-time.After(30 * time.Second):
		t.Fatal("floe serve did not exit within 30s of the signal")
	}
	err := p.cmd.Wait()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return p.cmd.ProcessState.ExitCode(), lines
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestServeRestart starts the binary twice on one data dir, first with
// flags and then with their FLOE_* variables, and stops it with SIGINT.
func TestServeRestart(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	warehouse := filepath.Join(t.TempDir(), "warehouse")
	runs := []struct {
		name string
		env  []string
		args []string
	}{
		{"flags", nil, []string{"--addr", "127.0.0.1:0", "--data-dir", dataDir, "--warehouse", warehouse}},
		{"environment", []string{"FLOE_ADDR=127.0.0.1:0", "FLOE_DATA_DIR=" + dataDir, "FLOE_WAREHOUSE=" + warehouse}, nil},
	}
	for _, run := range runs {
		t.Run(run.name, func(t *testing.T) {
			p := startServe(t, run.env, run.args...)
			for _, path := range []string{"/healthz", "/readyz"} {
				if code := getStatus(t, "http://"+p.addr+path); code != http.StatusOK {
					t.Errorf("GET %s = %d, want 200", path, code)
				}
			}
			code, stderr := p.interrupt(t)
			if code != 0 {
				t.Fatalf("exit code after SIGINT = %d, want 0; stderr:\n%s", code, strings.Join(stderr, "\n"))
			}
			if !strings.Contains(strings.Join(stderr, "\n"), `"msg":"version store closed"`) {
				t.Errorf("no clean store close in the log:\n%s", strings.Join(stderr, "\n"))
			}
			if fi, err := os.Stat(warehouse); err != nil || !fi.IsDir() {
				t.Errorf("warehouse directory not created: %v", err)
			}
		})
	}
}

// TestErrorsAreOneLine checks that failures end the process with a non-zero
// exit and one line on stderr naming the problem.
func TestErrorsAreOneLine(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"address in use", []string{"serve", "--dev", "--addr", busy.Addr().String(), "--data-dir", t.TempDir(), "--warehouse", t.TempDir()}, nil, "address already in use"},
		{"bad log format", []string{"serve", "--log-format", "xml"}, nil, `invalid log format "xml"`},
		{"bad environment", []string{"serve"}, []string{"FLOE_SHUTDOWN_TIMEOUT=soon"}, `invalid FLOE_SHUTDOWN_TIMEOUT="soon"`},
		{"unknown flag", []string{"serve", "--bogus"}, nil, "unknown flag: --bogus"},
		{"no authentication", []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--warehouse", t.TempDir()}, nil, "--dev"},
		{"dev mode off loopback", []string{"serve", "--dev", "--addr", "0.0.0.0:0", "--data-dir", t.TempDir(), "--warehouse", t.TempDir()}, nil, "loopback"},
		{"allowed location root", []string{"serve", "--dev", "--allowed-location", "file:/", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--warehouse", t.TempDir()}, nil, "--allowed-location \"file:/\""},
		{"allowed location root in the environment", []string{"serve", "--dev", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--warehouse", t.TempDir()}, []string{"FLOE_ALLOWED_LOCATION=/tmp/a,/"}, "file system root"},
		{"allowed location dotdot", []string{"serve", "--dev", "--allowed-location", "/tmp/a/../b", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--warehouse", t.TempDir()}, nil, `".." segment`},
		{"policy off outside dev mode", []string{"serve", "--policy-off", "--auth-token-file", "/nonexistent", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--warehouse", t.TempDir()}, nil, "--policy-off needs --dev"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(floeBin, tc.args...)
			cmd.Env = append(os.Environ(), tc.env...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() == 0 {
				t.Fatalf("floe %v: err = %v, want a non-zero exit", tc.args, err)
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			last := lines[len(lines)-1]
			if !strings.HasPrefix(last, "floe: ") || !strings.Contains(last, tc.want) {
				t.Errorf("last stderr line = %q, want \"floe: ...%s...\"", last, tc.want)
			}
		})
	}
}

func TestVersion(t *testing.T) {
	out, err := exec.Command(floeBin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "floe ") || strings.Count(string(out), "\n") != 1 {
		t.Errorf("floe version = %q, want one line starting with \"floe \"", out)
	}
}

// TestIdempotencyKeyLifetime checks that --idempotency-key-lifetime (or its
// variable) reaches /v1/config, and that 0 turns keys off.
func TestIdempotencyKeyLifetime(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"default", nil, nil, "PT30M"},
		{"flag", nil, []string{"--idempotency-key-lifetime", "2h15m"}, "PT2H15M"},
		{"environment", []string{"FLOE_IDEMPOTENCY_KEY_LIFETIME=45s"}, nil, "PT45S"},
		{"off", nil, []string{"--idempotency-key-lifetime", "0"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startServe(t, tc.env, append([]string{"--addr", "127.0.0.1:0", "--data-dir", t.TempDir(), "--warehouse", t.TempDir()}, tc.args...)...)
			client := &http.Client{Timeout: 10 * time.Second}
			resp, err := client.Get("http://" + p.addr + "/v1/config")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var cfg struct {
				Lifetime *string `json:"idempotency-key-lifetime"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&cfg); err != nil {
				t.Fatal(err)
			}
			got := ""
			if cfg.Lifetime != nil {
				got = *cfg.Lifetime
			}
			if got != tc.want {
				t.Errorf("idempotency-key-lifetime %q, want %q", got, tc.want)
			}
			if code, stderr := p.interrupt(t); code != 0 {
				t.Fatalf("exit code after SIGINT = %d; stderr:\n%s", code, strings.Join(stderr, "\n"))
			}
		})
	}
}
