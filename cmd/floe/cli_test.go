package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
)

// cliEnv is a real `floe serve` and the means to drive it: the floe CLI as
// a subprocess, and raw Nessie API v2 calls for the commits the CLI does
// not make.
type cliEnv struct {
	t    *testing.T
	addr string
	http *http.Client
	// warehouse is the server's warehouse root URL: tables committed
	// through the Nessie API name metadata files below it.
	warehouse string
	// realMetadata makes put write the metadata files its tables name
	// (the merge queue's checks read them); without it they do not exist,
	// and merges treat tables both sides changed as key conflicts.
	realMetadata bool
}

func newCLIEnv(t *testing.T) *cliEnv {
	t.Helper()
	dir := t.TempDir()
	p := startServe(t, nil, "--addr", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--warehouse", filepath.Join(dir, "warehouse"))
	return &cliEnv{t: t, addr: p.addr, http: &http.Client{Timeout: 10 * time.Second},
		warehouse: "file://" + filepath.ToSlash(filepath.Join(dir, "warehouse"))}
}

// floe runs the CLI against the server (through FLOE_SERVER) and returns
// stdout, stderr and the exit code.
func (e *cliEnv) floe(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return runFloe(t, []string{"FLOE_SERVER=http://" + e.addr}, args...)
}

func runFloe(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(floeBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("floe %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// ok runs the CLI and fails the test unless it succeeds.
func (e *cliEnv) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, code := e.floe(t, args...)
	if code != 0 {
		t.Fatalf("floe %s: exit %d, stderr: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// fails runs the CLI, expects exit code 1 and exactly one stderr line
// "floe: ..." holding every want, and returns that line.
func (e *cliEnv) fails(t *testing.T, args []string, want ...string) string {
	t.Helper()
	_, errOut, code := e.floe(t, args...)
	return checkFailure(t, args, errOut, code, want...)
}

func checkFailure(t *testing.T, args []string, errOut string, code int, want ...string) string {
	t.Helper()
	if code != 1 {
		t.Errorf("floe %s: exit %d, want 1", strings.Join(args, " "), code)
	}
	line := strings.TrimSuffix(errOut, "\n")
	if strings.Contains(line, "\n") || !strings.HasPrefix(line, "floe: ") {
		t.Errorf("floe %s: stderr %q, want one line \"floe: ...\"", strings.Join(args, " "), errOut)
	}
	for _, w := range want {
		if !strings.Contains(line, w) {
			t.Errorf("floe %s: stderr %q does not name %q", strings.Join(args, " "), line, w)
		}
	}
	return line
}

// api calls the Nessie API and decodes a 2xx answer into out.
func (e *cliEnv) api(method, path string, body, out any) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(e.t.Context(), method, "http://"+e.addr+"/api/v2"+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		e.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
}

func (e *cliEnv) head(branch string) string {
	var r struct{ Reference struct{ Hash string } }
	e.api(http.MethodGet, "/trees/"+url.PathEscape(branch), nil, &r)
	return r.Reference.Hash
}

// put commits one PUT per key on branch through the Nessie API and returns
// the new head. A dotted key of one element is a namespace; longer keys
// are tables whose metadata location is tagged with version. An existing
// table keeps its content ID, as Nessie requires.
func (e *cliEnv) put(branch, message, version string, keys ...string) string {
	e.t.Helper()
	var ops []any
	for _, k := range keys {
		elems := strings.Split(k, ".")
		content := map[string]any{"type": "NAMESPACE", "elements": elems}
		if len(elems) > 1 {
			content = map[string]any{"type": "ICEBERG_TABLE", "snapshotId": 1, "schemaId": 0, "specId": 0, "sortOrderId": 0,
				"metadataLocation": e.metadataLocation(k, version)}
			var entries struct{ Entries []struct{ ContentID string } }
			e.api(http.MethodGet, "/trees/"+url.PathEscape(branch)+"/entries?key="+url.QueryEscape(k), nil, &entries)
			if len(entries.Entries) == 1 {
				content["id"] = entries.Entries[0].ContentID
			}
		}
		ops = append(ops, map[string]any{"type": "PUT", "key": map[string]any{"elements": elems}, "content": content})
	}
	var r struct{ TargetBranch struct{ Hash string } }
	e.api(http.MethodPost, "/trees/"+url.PathEscape(branch+"@"+e.head(branch))+"/history/commit",
		map[string]any{"commitMeta": map[string]any{"message": message, "author": "alice"}, "operations": ops}, &r)
	return r.TargetBranch.Hash
}

// metadataLocation names table key's metadata file of version, which
// exists only when e.realMetadata is set.
func (e *cliEnv) metadataLocation(key, version string) string {
	if e.realMetadata {
		return e.writeMetadata(key, version, 0)
	}
	return e.warehouse + "/" + key + "/" + version + ".metadata.json"
}

// writeMetadata writes a real metadata file of table key (see
// testserver.WriteTableMetadata) under the warehouse and returns its
// location: the merge queue's checks read it.
func (e *cliEnv) writeMetadata(key, version string, schemaID int) string {
	e.t.Helper()
	loc := e.warehouse + "/" + key + "/" + version + ".metadata.json"
	testserver.WriteTableMetadata(e.t, loc, schemaID)
	return loc
}

// graphShape is the lane drawing of each line of `log --graph --oneline`
// output, with the commit text cut off.
var graphText = regexp.MustCompile(`^([*|/\\ ]*?) ?([0-9a-f]{12} .*)?$`)

func graphShape(t *testing.T, out string) (shape, subjects []string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		m := graphText.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("graph line %q is neither lanes nor a commit", line)
		}
		shape = append(shape, m[1])
		if m[2] != "" {
			subjects = append(subjects, m[2][13:])
		}
	}
	return shape, subjects
}

// TestCLI drives every client command against a real server, in the order
// a user would: branch, commit (through the API), diff, merge, log,
// conflicts, transplant, tags, cleanup, errors.
func TestCLI(t *testing.T) {
	e := newCLIEnv(t)
	e.put("main", "create db.t1", "v1", "db", "db.t1")

	t.Run("branch create and list", func(t *testing.T) {
		out := e.ok(t, "branch", "create", "dev")
		if !strings.HasPrefix(out, "Created branch dev at "+short(e.head("main"))) {
			t.Errorf("branch create: %q", out)
		}
		out = e.ok(t, "branch", "list")
		if !regexp.MustCompile(`(?m)^NAME +HASH +AGE +EXPIRES\n(dev +[0-9a-f]{12} +\d+s +never\n)?main +[0-9a-f]{12} +\S+ +never\n`).MatchString(out) ||
			!strings.Contains(out, "dev  ") {
			t.Errorf("branch list:\n%s", out)
		}
		// The two listings may be a second apart: compare them with ages masked.
		age := regexp.MustCompile(`\b\d+[smhd]\b`)
		if out2 := e.ok(t, "branch"); age.ReplaceAllString(out2, "AGE") != age.ReplaceAllString(out, "AGE") {
			t.Errorf("floe branch = %q, want the list %q", out2, out)
		}
	})

	e.put("dev", "add t2", "v1", "db.t2")
	e.put("main", "add t3", "v1", "db.t3")

	t.Run("diff", func(t *testing.T) {
		out := e.ok(t, "diff", "main", "dev")
		want := "KEY    CHANGE   TYPE\ndb.t2  ADDED    ICEBERG_TABLE\ndb.t3  REMOVED  ICEBERG_TABLE\n"
		if out != want {
			t.Errorf("diff main dev:\n%s\nwant:\n%s", out, want)
		}
	})

	t.Run("show", func(t *testing.T) {
		out := e.ok(t, "show", "dev:db.t2")
		var c map[string]any
		if err := json.Unmarshal([]byte(out), &c); err != nil {
			t.Fatalf("show: %v in %q", err, out)
		}
		if c["type"] != "ICEBERG_TABLE" || c["metadataLocation"] != e.warehouse+"/db.t2/v1.metadata.json" {
			t.Errorf("show dev:db.t2 = %v", c)
		}
		if !strings.Contains(out, "\n  \"metadataLocation\"") {
			t.Errorf("show output is not indented:\n%s", out)
		}
	})

	t.Run("ls", func(t *testing.T) {
		out := e.ok(t, "ls", "dev", "db")
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 4 || !regexp.MustCompile(`^KEY +TYPE +CONTENT-ID$`).MatchString(lines[0]) ||
			!regexp.MustCompile(`^db +NAMESPACE +\S+$`).MatchString(lines[1]) ||
			!regexp.MustCompile(`^db\.t1 +ICEBERG_TABLE +\S+$`).MatchString(lines[2]) ||
			!regexp.MustCompile(`^db\.t2 +ICEBERG_TABLE +\S+$`).MatchString(lines[3]) {
			t.Errorf("ls dev db:\n%s", out)
		}
		if col := strings.Index(lines[0], "TYPE"); strings.Index(lines[2], "ICEBERG_TABLE") != col {
			t.Errorf("ls columns are not aligned:\n%s", out)
		}
	})

	t.Run("key encoding", func(t *testing.T) {
		// An element holding '.' and '/' travels in Nessie's escaped path
		// form; on the command line its '.' is written "\.".
		e.ok(t, "branch", "create", "odd")
		elems := []string{"db", "odd.name/x"}
		e.api(http.MethodPost, "/trees/"+url.PathEscape("odd@"+e.head("odd"))+"/history/commit", map[string]any{
			"commitMeta": map[string]any{"message": "odd key"},
			"operations": []any{map[string]any{"type": "PUT", "key": map[string]any{"elements": elems},
				"content": map[string]any{"type": "ICEBERG_TABLE", "metadataLocation": e.warehouse + "/odd.metadata.json"}}},
		}, nil)
		out := e.ok(t, "show", `odd@`+e.head("odd")+`:db.odd\.name/x`)
		if !strings.Contains(out, e.warehouse+"/odd.metadata.json") {
			t.Errorf("show of an escaped key:\n%s", out)
		}
		if out := e.ok(t, "ls", "odd", "db"); !strings.Contains(out, `db.odd\.name/x `) {
			t.Errorf("ls does not show the escaped key:\n%s", out)
		}
	})

	t.Run("merge dry run", func(t *testing.T) {
		before := e.head("main")
		out := e.ok(t, "merge", "dev", "--into", "main", "--dry-run")
		if !strings.HasPrefix(out, "Dry run: merge dev into main would succeed") || !strings.Contains(out, "db.t2") {
			t.Errorf("merge --dry-run:\n%s", out)
		}
		if e.head("main") != before {
			t.Error("a dry run moved main")
		}
	})

	t.Run("merge", func(t *testing.T) {
		before := e.head("main")
		out := e.ok(t, "merge", "dev", "--into", "main", "-m", "merge dev")
		after := e.head("main")
		if after == before || !strings.HasPrefix(out, "Done: merge dev into main; main is now at "+short(after)) {
			t.Errorf("merge:\n%s", out)
		}
	})

	t.Run("log", func(t *testing.T) {
		out := e.ok(t, "log", "--oneline")
		var subjects []string
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			if !regexp.MustCompile(`^[0-9a-f]{12} `).MatchString(l) {
				t.Fatalf("log --oneline line %q", l)
			}
			subjects = append(subjects, l[13:])
		}
		// The first-parent log leaves out the merged branch's commit.
		if want := []string{"merge dev", "add t3", "create db.t1"}; strings.Join(subjects, "|") != strings.Join(want, "|") {
			t.Errorf("log --oneline subjects %q, want %q", subjects, want)
		}
		out = e.ok(t, "log", "main", "-n", "1")
		if !regexp.MustCompile(`^[0-9a-f]{12}  anonymous  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  merge dev\n$`).MatchString(out) {
			t.Errorf("log -n 1 = %q", out)
		}
	})

	t.Run("log graph", func(t *testing.T) {
		out := e.ok(t, "log", "main", "--graph", "--oneline")
		shape, subjects := graphShape(t, out)
		wantShape := []string{"*", `|\`, "| *", "* |", "|/", "*"}
		wantSubjects := []string{"merge dev", "add t2", "add t3", "create db.t1"}
		if strings.Join(shape, "\n") != strings.Join(wantShape, "\n") || strings.Join(subjects, "|") != strings.Join(wantSubjects, "|") {
			t.Errorf("log --graph --oneline:\n%s\nwant lanes %q and subjects %q", out, wantShape, wantSubjects)
		}
		out = e.ok(t, "log", "main", "--graph", "--oneline", "-n", "2")
		if shape, _ := graphShape(t, out); strings.Join(shape, "\n") != "*\n|\\\n| *" {
			t.Errorf("log --graph -n 2:\n%s", out)
		}
		out = e.ok(t, "log", "--graph")
		if !regexp.MustCompile(`^\* [0-9a-f]{12}  anonymous  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  merge dev\n`).MatchString(out) {
			t.Errorf("log --graph:\n%s", out)
		}
	})

	t.Run("merge conflict", func(t *testing.T) {
		e.ok(t, "branch", "create", "c1")
		e.put("c1", "t1 v2 on c1", "v2", "db.t1")
		e.put("main", "t1 v3 on main", "v3", "db.t1")
		before := e.head("main")
		line := e.fails(t, []string{"merge", "c1"}, "REFERENCE_CONFLICT", "db.t1", "conflicts: db.t1 ")
		t.Logf("conflict: %s", line)
		e.fails(t, []string{"merge", "c1", "--dry-run"}, "REFERENCE_CONFLICT", "db.t1")
		if e.head("main") != before {
			t.Error("a conflicting merge moved main")
		}
		// FORCE discards main's change to db.t1, which floe cannot read
		// here (no metadata file): refused until allowed.
		e.fails(t, []string{"merge", "c1", "--mode", "db.t1=FORCE"}, "db.t1", "could not read", "--discard-target-changes")
		if e.head("main") != before {
			t.Error("a FORCE merge refused by the CLI moved main")
		}
		e.ok(t, "merge", "c1", "--mode", "db.t1=FORCE", "--discard-target-changes")
		out := e.ok(t, "show", "main:db.t1")
		if !strings.Contains(out, "db.t1/v2.metadata.json") {
			t.Errorf("FORCE merge did not take c1's db.t1:\n%s", out)
		}
		e.fails(t, []string{"merge", "c1", "--mode", "db.t1=SOMETIMES"}, "SOMETIMES", "NORMAL, FORCE or DROP")
	})

	t.Run("transplant", func(t *testing.T) {
		e.ok(t, "branch", "create", "x", "--from", "main")
		h := e.put("x", "add t4", "v1", "db.t4")
		out := e.ok(t, "transplant", h[:12], "--into", "main", "--from", "x")
		if !strings.HasPrefix(out, "Done: transplant 1 commit(s) onto main") {
			t.Errorf("transplant:\n%s", out)
		}
		if out := e.ok(t, "ls", "main"); !strings.Contains(out, "db.t4 ") {
			t.Errorf("ls main after the transplant:\n%s", out)
		}
		out = e.ok(t, "log", "main", "-n", "1", "--oneline")
		if !strings.HasSuffix(out, " add t4\n") {
			t.Errorf("log after transplant = %q", out)
		}
	})

	t.Run("tags", func(t *testing.T) {
		mainHead := e.head("main")
		out := e.ok(t, "tag", "create", "v1", "--from", "main~1")
		if !strings.HasPrefix(out, "Created tag v1 at ") {
			t.Errorf("tag create: %q", out)
		}
		out = e.ok(t, "tag", "list")
		if !regexp.MustCompile(`^NAME +HASH +AGE +EXPIRES\nv1 +[0-9a-f]{12} +\d+s +never\n$`).MatchString(out) {
			t.Errorf("tag list:\n%s", out)
		}
		out = e.ok(t, "tag", "assign", "v1", "main")
		if !strings.HasSuffix(out, " to "+short(mainHead)+"\n") || e.head("v1") != mainHead {
			t.Errorf("tag assign: %q", out)
		}
		e.fails(t, []string{"branch", "delete", "v1"}, "v1 is a tag, not a branch")
		out = e.ok(t, "tag", "delete", "v1")
		if out != "Deleted tag v1 (was "+short(mainHead)+")\n" {
			t.Errorf("tag delete: %q", out)
		}
	})

	t.Run("branch assign and delete", func(t *testing.T) {
		out := e.ok(t, "branch", "assign", "dev", "main")
		if e.head("dev") != e.head("main") || !strings.HasPrefix(out, "Moved branch dev from ") {
			t.Errorf("branch assign: %q", out)
		}
		e.ok(t, "branch", "delete", "dev")
		if out := e.ok(t, "branch", "list"); strings.Contains(out, "dev ") {
			t.Errorf("dev still listed:\n%s", out)
		}
	})

	t.Run("json", func(t *testing.T) {
		for _, args := range [][]string{
			{"branch", "list"}, {"tag", "list"}, {"log", "-n", "3"}, {"log", "--graph"}, {"diff", "main~1", "main"},
			{"show", "main:db.t1"}, {"ls", "main"}, {"merge", "c1", "--dry-run"}, {"branch", "create", "j"},
			{"branch", "assign", "j", "main~1"}, {"branch", "delete", "j"},
		} {
			out := e.ok(t, append(args, "--json")...)
			var v map[string]any
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Errorf("floe %s --json: %v in %q", strings.Join(args, " "), err, out)
			}
		}
		var refs struct {
			References []struct{ Type, Name, Hash string }
		}
		if err := json.Unmarshal([]byte(e.ok(t, "branch", "list", "--json")), &refs); err != nil || len(refs.References) == 0 ||
			refs.References[0].Type != "BRANCH" || len(refs.References[0].Hash) != 64 {
			t.Errorf("branch list --json = %+v, %v", refs, err)
		}
		var log struct {
			LogEntries []struct {
				CommitMeta struct{ Hash, Message string }
			}
		}
		if err := json.Unmarshal([]byte(e.ok(t, "log", "--json", "-n", "1")), &log); err != nil || len(log.LogEntries) != 1 ||
			log.LogEntries[0].CommitMeta.Message != "add t4" {
			t.Errorf("log --json = %+v, %v", log, err)
		}
		// A refused request also prints the server's error object.
		out, errOut, code := e.floe(t, "log", "nosuch", "--json")
		var apiErr struct{ ErrorCode string }
		if code != 1 || json.Unmarshal([]byte(out), &apiErr) != nil || apiErr.ErrorCode != "REFERENCE_NOT_FOUND" {
			t.Errorf("log nosuch --json: exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"log", "nosuch"}, []string{"log nosuch", "REFERENCE_NOT_FOUND"}},
			{[]string{"branch", "delete", "nosuch"}, []string{"nosuch", "REFERENCE_NOT_FOUND"}},
			{[]string{"branch", "create", "main"}, []string{"REFERENCE_ALREADY_EXISTS"}},
			{[]string{"show", "main:db.nope"}, []string{"CONTENT_NOT_FOUND"}},
			{[]string{"show", "main"}, []string{"want REF:KEY"}},
			{[]string{"ls", "main", "db..t"}, []string{"empty element"}},
			{[]string{"merge", "nosuch"}, []string{"REFERENCE_NOT_FOUND"}},
			{[]string{"transplant", "0123456789abcdef", "--into", "main"}, []string{"REFERENCE_NOT_FOUND"}},
			{[]string{"branch", "bogus"}, []string{"unknown command"}},
		} {
			t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
				e.fails(t, tc.args, tc.want...)
			})
		}
	})
}

// TestCLIConnection checks the server address and token settings: the
// flag beats FLOE_SERVER, FLOE_TOKEN is sent as a bearer token, and an
// unreachable server is one line and exit 1.
func TestCLIConnection(t *testing.T) {
	auth := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case auth <- r.Header.Get("Authorization"):
		default:
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"references":[{"type":"BRANCH","name":"main","hash":"`+strings.Repeat("ab", 32)+`"}]}`)
	}))
	defer srv.Close()

	out, errOut, code := runFloe(t, []string{"FLOE_SERVER=http://127.0.0.1:1", "FLOE_TOKEN=s3cret"}, "branch", "list", "--server", srv.URL)
	// The fake server answers floe's API with the same list, which
	// holds no ages: the columns stay empty.
	if code != 0 || out != "NAME  HASH          AGE  EXPIRES\nmain  abababababab  -    -\n" {
		t.Errorf("branch list: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	select {
	case got := <-auth:
		if got != "Bearer s3cret" {
			t.Errorf("Authorization = %q, want \"Bearer s3cret\"", got)
		}
	default:
		t.Error("the server saw no request")
	}

	args := []string{"branch", "list", "--timeout", "2s"}
	_, errOut, code = runFloe(t, []string{"FLOE_SERVER=http://127.0.0.1:1"}, args...)
	checkFailure(t, args, errOut, code, "127.0.0.1:1", "connection refused")
	args = []string{"log", "--server", "ftp://example"}
	_, errOut, code = runFloe(t, nil, args...)
	checkFailure(t, args, errOut, code, "invalid server URL")
}

// TestCLINewUser covers what a new user hit (issue 14): global flags
// before the command name, log on an empty catalog, help that shows
// boolean flags plainly and names the client flags and FLOE_TOKEN, and a
// wrong token's error.
func TestCLINewUser(t *testing.T) {
	e := newCLIEnv(t)
	if out := e.ok(t, "log"); out != "no commits on the default branch yet\n" {
		t.Errorf("log on an empty catalog = %q", out)
	}
	if out := e.ok(t, "log", "main", "--oneline"); out != "no commits on main yet\n" {
		t.Errorf("log main on an empty catalog = %q", out)
	}
	for _, args := range [][]string{{"--json", "branch", "list"}, {"branch", "--json", "list"}, {"branch", "list", "--json"}, {"--json", "branch"}} {
		out := e.ok(t, args...)
		var refs struct{ References []struct{ Name string } }
		if err := json.Unmarshal([]byte(out), &refs); err != nil || len(refs.References) != 1 || refs.References[0].Name != "main" {
			t.Errorf("floe %v = %q, %v; want main as JSON", args, out, err)
		}
	}
	if out := e.ok(t, "--server", "http://"+e.addr, "tag", "list"); out != "NAME  HASH  AGE  EXPIRES\n" {
		t.Errorf("floe --server URL tag list = %q", out)
	}
	e.fails(t, []string{"serve", "--json"}, "not of serve")

	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"log", "--help"}} {
		out := e.ok(t, args...)
		if strings.Contains(out, "[=true|false]") {
			t.Errorf("floe %v shows [=true|false]:\n%s", args, out)
		}
	}
	top := e.ok(t, "--help")
	for _, want := range []string{"--server", "--json", "FLOE_TOKEN", "FLOE_SERVER"} {
		if !strings.Contains(top, want) {
			t.Errorf("floe --help does not name %s:\n%s", want, top)
		}
	}
	if serve := e.ok(t, "serve", "--help"); !strings.Contains(serve, "      --dev   ") {
		t.Errorf("floe serve --help does not show --dev plainly:\n%s", serve)
	}

	// A server that refuses the token, as floe's Nessie API answers it.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"status":401,"reason":"Unauthorized","message":"invalid bearer token","errorCode":"UNKNOWN"}`)
	}))
	defer srv.Close()
	_, errOut, code := runFloe(t, []string{"FLOE_SERVER=" + srv.URL, "FLOE_TOKEN=wrong"}, "branch", "list")
	if code != 1 || strings.Contains(errOut, "UNKNOWN") || !strings.Contains(errOut, "HTTP 401") || !strings.Contains(errOut, "not authorized: check FLOE_TOKEN") {
		t.Errorf("wrong token: exit %d, stderr %q", code, errOut)
	}
}
