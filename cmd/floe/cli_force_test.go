package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icetable "github.com/apache/iceberg-go/table"
	"golang.org/x/sys/unix"
)

// forceLake is a real floe with real Iceberg tables (written by
// iceberg-go through the Iceberg REST facade) for the FORCE tests.
type forceLake struct {
	e    *cliEnv
	cats map[string]*rest.Catalog
}

func newForceLake(t *testing.T) *forceLake {
	l := &forceLake{e: newCLIEnv(t), cats: map[string]*rest.Catalog{}}
	if err := l.cat(t, "main").CreateNamespace(t.Context(), catalog.ToIdentifier("ns"), nil); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *forceLake) cat(t *testing.T, branch string) *rest.Catalog {
	t.Helper()
	if c, ok := l.cats[branch]; ok {
		return c
	}
	wh := "lake"
	if branch != "main" {
		wh += "@" + branch
	}
	c, err := rest.NewCatalog(t.Context(), "floe", "http://"+l.e.addr, rest.WithWarehouseLocation(wh))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	l.cats[branch] = c
	return c
}

// createTable makes ns.NAME (id long, ts timestamp), partitioned by day.
func (l *forceLake) createTable(t *testing.T, name string) {
	t.Helper()
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp, Required: true})
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "day", Transform: iceberg.DayTransform{}})
	if _, err := l.cat(t, "main").CreateTable(t.Context(), catalog.ToIdentifier("ns", name), schema, catalog.WithPartitionSpec(&spec)); err != nil {
		t.Fatal(err)
	}
}

func (l *forceLake) load(t *testing.T, branch, name string) *icetable.Table {
	t.Helper()
	tbl, err := l.cat(t, branch).LoadTable(t.Context(), catalog.ToIdentifier("ns", name))
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// appendRows appends one file of rows with the ids at noon of day.
func (l *forceLake) appendRows(t *testing.T, branch, name, day string, ids ...int64) {
	t.Helper()
	tbl := l.load(t, branch, name)
	d, _ := time.Parse(time.DateOnly, day)
	sc, err := icetable.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, n := range ids {
		b.Field(0).(*array.Int64Builder).Append(n)
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(d.Add(12 * time.Hour).UnixMicro()))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	if _, err := tbl.AppendTable(t.Context(), at, 1024, nil); err != nil {
		t.Fatal(err)
	}
}

// ids scans the table on branch and returns its ids, sorted.
func (l *forceLake) ids(t *testing.T, branch, name string) []int64 {
	t.Helper()
	at, err := l.load(t, branch, name).Scan().ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	var out []int64
	col := at.Column(0)
	for _, ch := range col.Data().Chunks() {
		for i := range ch.Len() {
			out = append(out, ch.(*array.Int64).Value(i))
		}
	}
	slices.Sort(out)
	return out
}

// TestMergeForceDiscards: FORCE on a table main changed since the merge
// base throws main's changes away. `floe merge --dry-run` lists them (the
// snapshot, its data file and its rows, from the server's dry run); the
// merge refuses without --discard-target-changes when it cannot ask (stdin
// not a terminal), naming the table and what would be lost, and writes
// nothing; with the flag it runs, and main's rows are the branch's. A
// forced table main did not change needs no confirmation.
func TestMergeForceDiscards(t *testing.T) {
	l := newForceLake(t)
	e := l.e
	l.createTable(t, "events")
	l.createTable(t, "quiet")
	l.appendRows(t, "main", "events", "2026-08-19", 1)
	e.ok(t, "branch", "create", "etl")
	l.appendRows(t, "etl", "events", "2026-08-20", 2, 3)
	l.appendRows(t, "etl", "quiet", "2026-08-20", 10)
	l.appendRows(t, "main", "events", "2026-08-21", 4, 5)
	lost := l.load(t, "main", "events").CurrentSnapshot().SnapshotID

	force := []string{"merge", "etl", "--mode", "ns.events=FORCE", "--mode", "ns.quiet=FORCE"}
	out := e.ok(t, append(force, "--dry-run")...)
	t.Logf("merge --dry-run with FORCE:\n%s", out)
	for _, want := range []string{
		"Dry run: merge etl into main would succeed",
		"FORCE discards what main changed since the merge base:",
		fmt.Sprintf("ns.events: discards 1 snapshot(s) of the target (append %d), 2 row(s) in 1 data file(s) the target added", lost),
		fmt.Sprintf("  snapshot %d append", lost),
		"  data files +1 (2 rows) -0 (0 rows); delete files +0 (0 rows) -0 (0 rows)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("merge --dry-run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "ns.quiet: discards") {
		t.Errorf("the dry run says FORCE discards something of ns.quiet, which main did not change:\n%s", out)
	}

	head := e.head("main")
	line := e.fails(t, force, "ns.events", fmt.Sprintf("append %d", lost), "2 row(s) in 1 data file(s) the target added",
		"--discard-target-changes", "not done")
	if strings.Contains(line, "ns.quiet") {
		t.Errorf("the refusal names ns.quiet, which FORCE loses nothing of: %s", line)
	}
	if e.head("main") != head {
		t.Fatal("a refused FORCE merge moved main")
	}
	if got := l.ids(t, "main", "events"); !slices.Equal(got, []int64{1, 4, 5}) {
		t.Fatalf("main's rows after the refusal: %v", got)
	}

	out = e.ok(t, append(force, "--discard-target-changes")...)
	if !strings.HasPrefix(out, "Done: merge etl into main") {
		t.Errorf("merge with --discard-target-changes:\n%s", out)
	}
	if got := l.ids(t, "main", "events"); !slices.Equal(got, []int64{1, 2, 3}) {
		t.Errorf("main's rows after FORCE: %v, want the branch's [1 2 3]", got)
	}
	if got := l.ids(t, "main", "quiet"); !slices.Equal(got, []int64{10}) {
		t.Errorf("main's ns.quiet after FORCE: %v, want [10]", got)
	}
}

// TestMergeForceConfirm: on a terminal, floe merge with FORCE shows what
// it would discard and asks; "y" merges, anything else refuses and writes
// nothing; a confirmed FORCE whose target changed the table meanwhile
// conflicts rather than discard more than was shown. The terminal is a
// real pseudo-terminal.
func TestMergeForceConfirm(t *testing.T) {
	l := newForceLake(t)
	e := l.e
	l.createTable(t, "events")
	l.appendRows(t, "main", "events", "2026-08-19", 1)
	e.ok(t, "branch", "create", "etl")
	l.appendRows(t, "etl", "events", "2026-08-20", 2)
	l.appendRows(t, "main", "events", "2026-08-21", 3)
	args := []string{"merge", "etl", "--mode", "ns.events=FORCE"}

	head := e.head("main")
	stderr, code := e.onTerminal(t, "n\n", args...)
	if code == 0 || !strings.Contains(stderr, "Discard these changes of main? [y/N]") ||
		!strings.Contains(stderr, "ns.events: discards 1 snapshot(s) of the target") || !strings.Contains(stderr, "not confirmed") {
		t.Errorf("answered n: exit %d, stderr:\n%s", code, stderr)
	}
	if e.head("main") != head {
		t.Fatal("an unconfirmed FORCE merge moved main")
	}
	// main appends while the question waits: what was shown is no longer
	// all the merge would discard, so the confirmed merge conflicts and
	// main keeps every row.
	stderr, code = e.onTerminalAfter(t, "y\n", func() { l.appendRows(t, "main", "events", "2026-08-22", 4) }, args...)
	if code == 0 || !strings.Contains(stderr, "ns.events") || !strings.Contains(stderr, "expected target content") {
		t.Errorf("main changed during the question: exit %d, stderr:\n%s", code, stderr)
	}
	if got := l.ids(t, "main", "events"); !slices.Equal(got, []int64{1, 3, 4}) {
		t.Fatalf("main's rows after a FORCE whose target moved: %v, want [1 3 4]", got)
	}
	stderr, code = e.onTerminal(t, "y\n", args...)
	if code != 0 || !strings.Contains(stderr, "Discard these changes of main? [y/N]") {
		t.Fatalf("answered y: exit %d, stderr:\n%s", code, stderr)
	}
	if got := l.ids(t, "main", "events"); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("main's rows after a confirmed FORCE: %v, want the branch's [1 2]", got)
	}
}

// onTerminal runs the CLI with a pseudo-terminal as stdin, typing answer
// into it, and returns stderr and the exit code.
func (e *cliEnv) onTerminal(t *testing.T, answer string, args ...string) (string, int) {
	return e.onTerminalAfter(t, answer, nil, args...)
}

// onTerminalAfter is onTerminal that, when meanwhile is set, types the
// answer only once the question is on the screen, after meanwhile ran.
func (e *cliEnv) onTerminalAfter(t *testing.T, answer string, meanwhile func(), args ...string) (string, int) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pts.Close()
	if meanwhile == nil {
		// Typed before the CLI reads: the terminal buffers the line.
		if _, err := ptmx.WriteString(answer); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(floeBin, args...)
	cmd.Env = append(os.Environ(), "FLOE_SERVER=http://"+e.addr)
	var stdout bytes.Buffer
	stderr := &promptWatch{prompt: "[y/N] ", seen: make(chan struct{})}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, &stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if meanwhile != nil {
		select {
		case <-stderr.seen:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("floe %s asked nothing: %s", strings.Join(args, " "), stderr.String())
		}
		meanwhile()
		if _, err := ptmx.WriteString(answer); err != nil {
			t.Fatal(err)
		}
	}
	err = cmd.Wait()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	t.Logf("floe %s on a terminal, typed %q: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), answer,
		cmd.ProcessState.ExitCode(), stdout.String(), stderr.String())
	return stderr.String(), cmd.ProcessState.ExitCode()
}

// promptWatch collects what the CLI writes and closes seen once prompt
// was written.
type promptWatch struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	prompt string
	seen   chan struct{}
	closed bool
}

func (w *promptWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.closed && strings.Contains(w.buf.String(), w.prompt) {
		w.closed = true
		close(w.seen)
	}
	return len(p), nil
}

func (w *promptWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
