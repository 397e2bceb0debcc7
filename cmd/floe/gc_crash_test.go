package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/rowlake"
	"github.com/floe-catalog/floe/housekeeping/gc"
)

// crashOrphansEnv and crashPointsEnv enlarge TestGCCrashMidSweep: more
// old unreferenced files (a longer sweep) and more kill points.
const (
	crashOrphansEnv = "FLOE_GC_CRASH_ORPHANS"
	crashPointsEnv  = "FLOE_GC_CRASH_POINTS"
)

// TestGCCrashMidSweep kills `floe serve` with SIGKILL in the middle of a
// real garbage collection's sweep, at several points, and checks that the
// crash deleted nothing but files the run's plan (its dry run) names, that
// every table on every live branch and the tag scans in full (rows exact)
// after a restart on the same data dir, and that the next run deletes the
// rest of the plan and nothing else.
//
// The lake is written once with iceberg-go through the binary: tables on
// main and three branches and a tag, appends, a position delete, snapshot
// expiry (a REST remove-snapshots commit) on branches, dropped tables, a
// deleted branch, and a branch keeping one commit of history, so that
// expired snapshots, dropped tables and the deleted branch leave
// unreachable files; plus old stray files in the tables' directories so
// the sweep spans several batches. Every warehouse file is then made four
// days old, older than the grace period, live ones too: only the mark
// keeps them. The data dir and warehouse are saved and restored before
// each kill point, so every point starts from the same lake.
func TestGCCrashMidSweep(t *testing.T) {
	orphans := envInt(t, crashOrphansEnv, 20000)
	points := []float64{0, 0.25, 0.5, 0.75}
	if n := envInt(t, crashPointsEnv, 0); n > 0 {
		points = points[:0]
		for i := range n {
			points = append(points, 0.9*float64(i)/float64(n))
		}
	}

	l := newCrashLake(t)
	l.start()
	l.write()
	l.ScanAll()
	l.stop()
	l.addOrphans(orphans)
	l.age(4 * 24 * time.Hour)
	saved := t.TempDir()
	copyTree(t, l.dataDir, filepath.Join(saved, "data"), false)
	copyTree(t, l.whDir, filepath.Join(saved, "warehouse"), true)

	for _, at := range points {
		l.restore(saved)
		l.start()
		plan := l.plan()
		before := l.files()
		target := max(1, int(at*float64(len(plan))))
		l.gcAndKill(plan, target)
		l.start()
		after := l.files()
		gone := 0
		for f := range before {
			if !after[f] {
				gone++
				if !plan[f] {
					t.Errorf("kill after %d of %d planned deletions: %s is gone but the plan did not name it", target, len(plan), f)
				}
			}
		}
		if gone == 0 || gone == len(plan) {
			t.Fatalf("kill after %d of %d planned deletions: %d files were gone, want some but not all (raise %s)",
				target, len(plan), gone, crashOrphansEnv)
		}
		t.Logf("killed after %d of %d planned deletions (aimed at %d)", gone, len(plan), target)
		l.ScanAll()

		rep := l.gc(false)
		if rep.Outcome != gc.OutcomeOK || rep.Deleted != int64(len(plan)-gone) {
			t.Errorf("the run after the crash: outcome %s (%s), deleted %d, want ok and %d", rep.Outcome, rep.Error, rep.Deleted, len(plan)-gone)
		}
		final := l.files()
		for f := range before {
			if plan[f] && final[f] {
				t.Errorf("%s survived the run after the crash", f)
			}
			if !plan[f] && !final[f] {
				t.Errorf("%s is gone but no plan named it", f)
			}
		}
		l.ScanAll()
		if stale, _ := filepath.Glob(filepath.Join(l.tmpDir, "floe-gc-marks-*")); len(stale) > 0 {
			t.Logf("%d mark databases of killed runs left in the temporary directory", len(stale))
		}
		l.stop()
	}
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a count", name, v)
	}
	return n
}

// crashLake is a lake served by the real binary, restarted at will on
// the same data dir and warehouse.
type crashLake struct {
	*rowlake.Lake          // the tables, written through p, and their rows
	t                      *testing.T
	dataDir, whDir, tmpDir string
	p                      *floeProcess
}

func newCrashLake(t *testing.T) *crashLake {
	dir := t.TempDir()
	return &crashLake{Lake: rowlake.New(t, ""), t: t, dataDir: filepath.Join(dir, "data"), whDir: filepath.Join(dir, "warehouse"),
		tmpDir: t.TempDir()}
}

// start runs floe serve; its temporary directory (where a run's mark
// database goes) is the test's.
func (l *crashLake) start() {
	l.t.Helper()
	l.p = startServe(l.t, []string{"TMPDIR=" + l.tmpDir}, "--addr", "127.0.0.1:0", "--data-dir", l.dataDir, "--warehouse", l.whDir)
	l.Connect("http://" + l.p.addr)
}

func (l *crashLake) stop() {
	l.t.Helper()
	l.CloseCatalogs()
	if code, stderr := l.p.interrupt(l.t); code != 0 {
		l.t.Fatalf("exit code after SIGINT = %d; stderr:\n%s", code, strings.Join(stderr, "\n"))
	}
}

func (l *crashLake) restore(saved string) {
	l.t.Helper()
	for _, d := range []string{l.dataDir, l.whDir} {
		if err := os.RemoveAll(d); err != nil {
			l.t.Fatal(err)
		}
	}
	copyTree(l.t, filepath.Join(saved, "data"), l.dataDir, false)
	copyTree(l.t, filepath.Join(saved, "warehouse"), l.whDir, true)
}

func (l *crashLake) floe(args ...string) {
	l.t.Helper()
	if _, errOut, code := runFloe(l.t, []string{"FLOE_SERVER=http://" + l.p.addr}, args...); code != 0 {
		l.t.Fatalf("floe %s: exit %d: %s", strings.Join(args, " "), code, errOut)
	}
}

// expire is ExpireAllButLast, which must find snapshots to expire.
func (l *crashLake) expire(ref, name string) {
	l.t.Helper()
	if l.ExpireAllButLast(ref, name) == 0 {
		l.t.Fatalf("expire %s on %s: a single snapshot", name, ref)
	}
}

// refFrom makes ref at from's head (a branch or tag), expecting its rows.
func (l *crashLake) refFrom(kind, name, from string, extra ...string) {
	l.t.Helper()
	l.floe(append([]string{kind, "create", name, "--from", from}, extra...)...)
	l.ExpectCopy(name, from)
}

// write builds the lake. What becomes unreachable: ns.d (only on branch
// tmp, deleted), ns.e (only on feat, dropped there), and the snapshots
// expired on feat, whose history keeps one commit.
func (l *crashLake) write() {
	l.t.Helper()
	l.Create("main", "ns.a")
	for range 3 {
		l.AppendRows("main", "ns.a", 5)
	}
	l.DeleteID("main", "ns.a", 3)
	l.Create("main", "ns.b")
	l.AppendRows("main", "ns.b", 4)
	l.refFrom("tag", "v1", "main")

	l.refFrom("branch", "dev", "main")
	l.AppendRows("dev", "ns.a", 5)
	l.expire("dev", "ns.a") // still reached by main and v1
	l.AppendRows("main", "ns.a", 5)
	l.AppendRows("main", "ns.b", 3)
	l.expire("main", "ns.b") // still reached by main's history and v1

	l.refFrom("branch", "feat", "main", "--keep-commits", "1")
	l.Create("feat", "ns.c")
	l.AppendRows("feat", "ns.c", 5)
	l.AppendRows("feat", "ns.c", 5)
	l.expire("feat", "ns.c")
	l.DeleteID("feat", "ns.a", 7)
	l.Create("feat", "ns.e")
	l.AppendRows("feat", "ns.e", 5)
	l.Drop("feat", "ns.e")
	l.Drop("feat", "ns.b") // still on main, dev and v1

	l.refFrom("branch", "tmp", "main")
	l.Create("tmp", "ns.d")
	l.AppendRows("tmp", "ns.d", 5)
	l.AppendRows("tmp", "ns.d", 5)
	l.floe("branch", "delete", "tmp")
	delete(l.Rows, "tmp")
}

// addOrphans writes n stray files, spread over the tables' data and
// metadata directories so that the sweep meets them among the tables'
// own unreachable files.
func (l *crashLake) addOrphans(n int) {
	l.t.Helper()
	var dirs []string
	err := filepath.WalkDir(l.whDir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.IsDir() && (e.Name() == "data" || e.Name() == "metadata") {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil || len(dirs) == 0 {
		l.t.Fatalf("table directories: %v (%d)", err, len(dirs))
	}
	for i := range n {
		p := filepath.Join(dirs[i%len(dirs)], fmt.Sprintf("orphan-%05d.parquet", i))
		if err := os.WriteFile(p, []byte("stray"), 0o600); err != nil {
			l.t.Fatal(err)
		}
	}
}

func (l *crashLake) age(d time.Duration) {
	l.t.Helper()
	old := time.Now().Add(-d)
	err := filepath.WalkDir(l.whDir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	})
	if err != nil {
		l.t.Fatal(err)
	}
}

func (l *crashLake) files() map[string]bool {
	l.t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(l.whDir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			out[p] = true
		}
		return err
	})
	if err != nil {
		l.t.Fatal(err)
	}
	return out
}

func (l *crashLake) post(path string, body []byte, want int, out any) {
	l.t.Helper()
	resp, err := http.Post("http://"+l.p.addr+path, "application/json", bytes.NewReader(body))
	if err != nil {
		l.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		l.t.Fatalf("POST %s: %d %s", path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			l.t.Fatalf("POST %s: %v in %s", path, err, data)
		}
	}
}

// gc runs a garbage collection through floe's API and waits for its
// report (listing every file it deletes, or would).
func (l *crashLake) gc(dryRun bool) *gc.Report {
	l.t.Helper()
	body, err := json.Marshal(map[string]any{"dryRun": dryRun, "listFiles": 100000})
	if err != nil {
		l.t.Fatal(err)
	}
	var rep gc.Report
	l.post("/api/floe/v1/gc", body, http.StatusOK, &rep)
	return &rep
}

// plan is what a run would delete: the dry run's files, as local paths.
func (l *crashLake) plan() map[string]bool {
	l.t.Helper()
	rep := l.gc(true)
	if rep.Outcome != gc.OutcomeOK || rep.Deleted != int64(len(rep.Files)) || rep.Deleted == 0 {
		l.t.Fatalf("dry run: outcome %s (%s), %d to delete, %d listed", rep.Outcome, rep.Error, rep.Deleted, len(rep.Files))
	}
	plan := map[string]bool{}
	var tables int
	for _, f := range rep.Files {
		u, err := url.Parse(f.Location)
		if err != nil || u.Scheme != "file" {
			l.t.Fatalf("dry run names %q", f.Location)
		}
		plan[filepath.Clean(u.Path)] = true
		if !strings.Contains(u.Path, "/orphan-") {
			tables++
		}
	}
	// The tables' unreachable files: ns.d's and ns.e's, feat's expired
	// snapshot's manifest list.
	if tables < 10 {
		l.t.Fatalf("dry run plans %d table files besides the strays, want ≥ 10: %v", tables, rep.Files)
	}
	return plan
}

// gcAndKill starts a real run and kills the server with SIGKILL once the
// target-th planned file in the sweep's order (a directory walk's: by
// path components) is gone. One lstat a poll keeps the kill close to that
// point; the deletes of a batch run in parallel, so it is not exact.
func (l *crashLake) gcAndKill(plan map[string]bool, target int) {
	l.t.Helper()
	order := slices.Collect(maps.Keys(plan))
	slices.SortFunc(order, func(a, b string) int {
		return slices.Compare(strings.Split(a, string(filepath.Separator)), strings.Split(b, string(filepath.Separator)))
	})
	watch := order[target-1]
	done := make(chan string, 1)
	go func() {
		body := `{"listFiles": 0, "waitSeconds": 50}`
		resp, err := http.Post("http://"+l.p.addr+"/api/floe/v1/gc", "application/json", strings.NewReader(body))
		if err != nil {
			done <- err.Error()
			return
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- fmt.Sprintf("%d %s", resp.StatusCode, data)
	}()
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := os.Lstat(watch)
		if os.IsNotExist(err) {
			break
		}
		if err != nil {
			l.t.Fatal(err)
		}
		select {
		case ans := <-done:
			l.t.Fatalf("the run answered before %s was deleted: %s", watch, ans)
		default:
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("%s not deleted after 60s", watch)
		}
	}
	if err := l.p.cmd.Process.Kill(); err != nil {
		l.t.Fatal(err)
	}
	l.CloseCatalogs()
	_, _ = l.p.wait(l.t)
	<-done // the connection broke
}

// copyTree copies a directory tree, keeping files' modification times;
// with link, by hard links (for the warehouse: nothing writes to a
// warehouse file once written, and deleting a link keeps the other).
func copyTree(t *testing.T, from, to string, link bool) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		if e.IsDir() {
			return os.MkdirAll(dst, 0o750)
		}
		if link {
			return os.Link(p, dst)
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, info.Mode().Perm()); err != nil {
			return err
		}
		return os.Chtimes(dst, info.ModTime(), info.ModTime())
	})
	if err != nil {
		t.Fatalf("copy %s to %s: %v", from, to, err)
	}
}
