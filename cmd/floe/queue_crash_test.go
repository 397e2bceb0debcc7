package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestQueueCrash kills `floe serve` with SIGKILL while its merge queue is
// working through many requests, three times, restarting it on the same
// data dir each time, and checks every request ends exactly once: merged, with exactly one merge
// commit on main carrying its id (none lost, none applied twice), and no
// candidate branch left behind.
//
// The first kill is certain to hit a batch in validation: an external
// check that every candidate runs holds its third call until floe dies.
// The later kills come as soon as more requests merged, wherever the
// worker then is.
func TestQueueCrash(t *testing.T) {
	const n = 48
	dir := t.TempDir()
	var calls atomic.Int32
	held := make(chan struct{}, 1)
	release := make(chan struct{})
	check := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		default:
			if calls.Add(1) >= 3 {
				select {
				case held <- struct{}{}:
				default:
				}
				// Until floe is killed: the request's connection then
				// closes, or the test releases it.
				select {
				case <-release:
				case <-r.Context().Done():
				}
				return
			}
		}
		_, _ = io.WriteString(w, `{"passed": true}`)
	}))
	t.Cleanup(check.Close)
	checks := filepath.Join(dir, "checks.json")
	cfg := fmt.Sprintf(`{"checks": [{"name": "held", "url": %q, "secretEnv": "FLOE_TEST_CHECK_SECRET", "always": true, "retries": 0}]}`, check.URL)
	if err := os.WriteFile(checks, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"FLOE_TEST_CHECK_SECRET=s3cret"}
	args := []string{"--addr", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--warehouse", filepath.Join(dir, "warehouse"), "--merge-checks", checks}
	p := startServe(t, env, args...)
	e := &cliEnv{t: t, addr: p.addr, http: &http.Client{Timeout: 10 * time.Second},
		warehouse: "file://" + filepath.ToSlash(filepath.Join(dir, "warehouse")), realMetadata: true}
	e.put("main", "create db", "v1", "db")
	main := e.head("main")
	for i := range n {
		b := fmt.Sprintf("ingest/s%02d", i)
		e.api(http.MethodPost, "/trees?name="+url.QueryEscape(b)+"&type=BRANCH", map[string]any{"type": "BRANCH", "name": "main", "hash": main}, nil)
		e.put(b, "add a table", "v1", fmt.Sprintf("db.t%02d", i))
	}

	// Submit them all at once, and kill the server as soon as the first
	// request merged: the worker is then in the middle of the queue.
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var r struct{ ID string }
			floeCall(t, e, http.MethodPost, "/merge-requests", map[string]any{"source": fmt.Sprintf("ingest/s%02d", i), "target": "main"}, &r)
			ids[i] = r.ID
		})
	}
	wg.Wait()
	// Kill it three times: first while the check holds a batch, then
	// each time as soon as more requests merged than at the last kill
	// and a batch is being validated, in the middle of the queue and
	// perhaps of a landing.
	last := 0
	for kill := 1; kill <= 3; kill++ {
		var merged int
		if kill == 1 {
			select {
			case <-held:
			case <-time.After(time.Minute):
				t.Fatalf("the check was not called a third time within a minute (%d calls)", calls.Load())
			}
			merged = len(listRequests(t, e, "merged"))
		}
		for deadline := time.Now().Add(time.Minute); kill > 1; {
			merged = len(listRequests(t, e, "merged"))
			if merged == n || (merged > last && len(listRequests(t, e, "validating")) > 0) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("kill %d: no request merged within a minute (%d merged)", kill, merged)
			}
			time.Sleep(2 * time.Millisecond)
		}
		if merged == n {
			if kill == 1 {
				t.Fatalf("all %d requests merged before the first kill; raise n", n)
			}
			break
		}
		if err := p.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = p.cmd.Wait()
		if kill == 1 {
			close(release)
		}
		t.Logf("kill %d with at least %d of %d requests merged", kill, merged, n)
		last = merged
		p = startServe(t, env, args...)
		e.addr = p.addr
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(listRequests(t, e, "merged")) < n {
		for _, st := range []string{"failed", "cancelled", "rejected", "review"} {
			if got := listRequests(t, e, st); len(got) > 0 {
				t.Fatalf("%d request(s) %s after the restarts: %v", len(got), st, got)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d requests merged two minutes after the last restart", len(listRequests(t, e, "merged")), n)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Exactly one merge commit per request on main.
	landed := map[string]int{}
	token := ""
	for {
		var page struct {
			LogEntries []struct {
				CommitMeta struct{ Properties map[string]string }
			}
			HasMore bool
			Token   string
		}
		e.api(http.MethodGet, "/trees/main/history?max-records=100&page-token="+url.QueryEscape(token), nil, &page)
		for _, le := range page.LogEntries {
			if id := le.CommitMeta.Properties["floe.queue.request"]; id != "" {
				landed[id]++
			}
		}
		if !page.HasMore {
			break
		}
		token = page.Token
	}
	for i, id := range ids {
		if landed[id] != 1 {
			t.Errorf("request %s (ingest/s%02d) landed %d times on main, want once", id, i, landed[id])
		}
	}
	requeued := 0
	for _, id := range ids {
		var r struct{ Audit []struct{ Reason string } }
		floeCall(t, e, http.MethodGet, "/merge-requests/"+id, nil, &r)
		for _, a := range r.Audit {
			if strings.Contains(a.Reason, "floe restarted") {
				requeued++
			}
		}
	}
	t.Logf("%d request(s) were being validated at a kill and were queued again", requeued)
	if requeued == 0 {
		t.Errorf("no kill hit a batch being validated")
	}
	// A batch's candidate is deleted just after its landing write, so
	// the last one may still be there for a moment after its requests
	// read merged.
	var left []string
	for deadline := time.Now().Add(30 * time.Second); ; {
		var refs struct{ References []struct{ Name string } }
		e.api(http.MethodGet, "/trees", nil, &refs)
		left = left[:0]
		for _, r := range refs.References {
			if strings.HasPrefix(r.Name, "floe-queue/") {
				left = append(left, r.Name)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("candidate branches left behind: %v", left)
		_, lines := p.interrupt(t)
		for _, l := range lines {
			if strings.Contains(l, "merge queue") || strings.Contains(l, "floe-queue/") {
				t.Log(l)
			}
		}
	}
}

// floeCall calls floe's own API and decodes a 2xx answer into out.
func floeCall(t *testing.T, e *cliEnv, method, path string, body, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, "http://"+e.addr+"/api/floe/v1"+path, rd)
	if err != nil {
		t.Error(err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Do(req)
	if err != nil {
		t.Error(err)
		return
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
		return
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Errorf("%s %s: %v", method, path, err)
		}
	}
}

// listRequests returns the ids of the requests in state.
func listRequests(t *testing.T, e *cliEnv, state string) []string {
	t.Helper()
	var out struct{ Requests []struct{ ID string } }
	floeCall(t, e, http.MethodGet, "/merge-requests?state="+state, nil, &out)
	ids := make([]string, 0, len(out.Requests))
	for _, r := range out.Requests {
		ids = append(ids, r.ID)
	}
	return ids
}
