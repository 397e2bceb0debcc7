package floeapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/policy/authn"
	"github.com/floe-catalog/floe/rest/floeapi"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/feedevent"
)

// createNamespace makes a namespace on branch through the store, as
// principal.
func createNamespace(t *testing.T, s *versionstore.Store, branch, name, principal string) versionstore.Hash {
	t.Helper()
	r, err := s.GetRef(branch)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Commit(t.Context(), versionstore.CommitRequest{Branch: branch, Expected: r.Head, Committer: principal,
		Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{name}, Content: &versionstore.Content{Type: versionstore.Namespace}}}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Commit.Hash
}

func getEvents(t *testing.T, s *testserver.Server, who, query string) (int, floeapi.EventPage, floeapi.ErrorBody) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+floeapi.Prefix+"/events"+query, nil)
	if err != nil {
		t.Fatal(err)
	}
	if who != "" {
		req.Header.Set("Authorization", "Bearer tok-"+who)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page floeapi.EventPage
	var eb floeapi.ErrorBody
	if resp.StatusCode == http.StatusOK {
		err = json.NewDecoder(resp.Body).Decode(&page)
	} else {
		err = json.NewDecoder(resp.Body).Decode(&eb)
	}
	if err != nil {
		t.Fatalf("GET /events%s: %d, undecodable body: %v", query, resp.StatusCode, err)
	}
	return resp.StatusCode, page, eb
}

func summarize(evs []changefeed.Event) []string {
	var out []string
	for _, e := range evs {
		s := fmt.Sprintf("%s %s", e.Type, e.Ref)
		if e.Content != nil {
			s += " " + strings.Join(e.Content.Key, ".")
			if e.Content.Iceberg != nil && e.Content.Iceberg.Operation != "" {
				s += " " + e.Content.Iceberg.Operation
			}
		}
		out = append(out, s)
	}
	return out
}

func TestEventsThroughTheIcebergAPIAndLongPolling(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	post := func(path, body string) {
		t.Helper()
		resp, err := http.Post(s.URL+"/v1/lake"+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	post("/namespaces", `{"namespace":["db"]}`)
	post("/namespaces/db/tables", `{"name":"t","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}`)

	status, page, _ := getEvents(t, s, "", "?after=1&types=table.*,namespace.*")
	if status != http.StatusOK {
		t.Fatalf("GET /events: %d", status)
	}
	got := strings.Join(summarize(page.Events), "; ")
	if want := "namespace.created main db; table.created main db.t create"; got != want {
		t.Fatalf("events: %s; want %s", got, want)
	}
	ev := page.Events[1]
	if ev.Principal != floeapi.DefaultPrincipal || ev.Commit == "" || ev.Time.IsZero() || ev.Content.Iceberg.MetadataLocation == "" {
		t.Fatalf("table.created lacks principal, commit, time or metadata: %+v", ev)
	}

	// A long poll waits for the next event.
	type answer struct {
		status int
		page   floeapi.EventPage
	}
	done := make(chan answer, 1)
	start := time.Now()
	go func() {
		st, p, _ := getEvents(t, s, "", "?wait=20s&types=namespace.created&after="+page.Next.String())
		done <- answer{st, p}
	}()
	time.Sleep(200 * time.Millisecond)
	post("/namespaces", `{"namespace":["later"]}`)
	a := <-done
	if a.status != http.StatusOK || len(a.page.Events) != 1 || a.page.Events[0].Content.Key[0] != "later" {
		t.Fatalf("long poll: %d %v", a.status, summarize(a.page.Events))
	}
	if waited := time.Since(start); waited > 10*time.Second {
		t.Fatalf("long poll answered after %s", waited)
	}

	// A long poll with nothing to report answers empty, with the cursor.
	st, empty, _ := getEvents(t, s, "", "?wait=300ms&after="+a.page.Next.String())
	if st != http.StatusOK || len(empty.Events) != 0 || empty.Next != a.page.Next {
		t.Fatalf("quiet long poll: %d %+v", st, empty)
	}
	// after=now starts at the end.
	if _, now, _ := getEvents(t, s, "", "?after=now"); len(now.Events) != 0 || now.Next != a.page.Next {
		t.Fatalf("after=now: %+v, want nothing and next %s", now, a.page.Next)
	}
}

func TestEventsBadInput(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	for _, q := range []string{"?after=x", "?after=3.", "?types=table.exploded", "?limit=0", "?limit=1001", "?wait=1h", "?wait=soon"} {
		status, _, eb := getEvents(t, s, "", q)
		if status != http.StatusBadRequest || eb.Error.Code != floeapi.CodeBadRequest || eb.Error.Message == "" {
			t.Errorf("GET /events%s: %d %+v; want 400 BAD_REQUEST", q, status, eb)
		}
	}
}

// eventPolicyServer starts a server whose policy lets only sam read
// branches under secret/ and the events on no reference; every other
// question is allowed.
func eventPolicyServer(t *testing.T, adjust ...func(*testserver.Options)) *testserver.Server {
	t.Helper()
	dir := t.TempDir()
	var tokens []map[string]any
	for _, id := range []string{"sam", "alice"} {
		tokens = append(tokens, map[string]any{"sha256": authn.HashSecret("tok-" + id), "principal": id})
	}
	b, err := json.Marshal(map[string]any{"tokens": tokens})
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokenFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	rego := filepath.Join(dir, "bundle", "floe", "authz", "authz.rego")
	if err := os.MkdirAll(filepath.Dir(rego), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rego, []byte(`package floe.authz

decision := {"allow": false, "reasons": ["secret branches are sam's"]} if {
	input.action == "read"
	startswith(input.ref.name, "secret/")
	input.principal.id != "sam"
} else := {"allow": false, "reasons": ["the catalog's own events are sam's"]} if {
	input.action == "admin.events.read"
	input.principal.id != "sam"
} else := {"allow": true, "reasons": ["test"]}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := testserver.Options{
		Security: &assemble.Security{Authn: assemble.Authn{TokenFile: tokenFile}, Policy: &assemble.Policy{Bundle: filepath.Join(dir, "bundle")}},
	}
	for _, a := range adjust {
		a(&opts)
	}
	return testserver.Start(t, opts)
}

func TestEventsOnlyWhatPolicyLetsTheReaderRead(t *testing.T) {
	s := eventPolicyServer(t)
	main, err := s.Store.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: "secret/x", Type: versionstore.Branch, Target: main.Head, Principal: "sam"}); err != nil {
		t.Fatal(err)
	}
	createNamespace(t, s.Store, "secret/x", "hidden", "sam")
	createNamespace(t, s.Store, "main", "open", "alice")
	gcRun, err := feedevent.GCEvent("sam", feedevent.GCRun{ID: "g1", Outcome: "ok", Deleted: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.AppendEvent(t.Context(), gcRun); err != nil {
		t.Fatal(err)
	}

	_, all, _ := getEvents(t, s, "sam", "?types=branch.*,commit,namespace.*,gc.*")
	_, some, _ := getEvents(t, s, "alice", "?types=branch.*,commit,namespace.*,gc.*")
	if got, want := strings.Join(summarize(all.Events), "; "),
		"branch.created main; branch.created secret/x; commit secret/x; namespace.created secret/x hidden; commit main; namespace.created main open; gc.completed "; got != want {
		t.Fatalf("sam's events: %s; want %s", got, want)
	}
	if got, want := strings.Join(summarize(some.Events), "; "), "branch.created main; commit main; namespace.created main open"; got != want {
		t.Fatalf("alice's events: %s; want %s", got, want)
	}
	if all.Next != some.Next {
		t.Fatalf("the cursor must pass over what a reader may not see: sam at %s, alice at %s", all.Next, some.Next)
	}
	// Filtered to the secret branch, alice gets nothing, and moves on.
	_, none, _ := getEvents(t, s, "alice", "?ref=secret/x&types=branch.*,commit,namespace.*,gc.*")
	if len(none.Events) != 0 || none.Next != all.Next {
		t.Fatalf("alice on secret/x: %+v", none)
	}
	if status, _, _ := getEvents(t, s, "", ""); status != http.StatusUnauthorized {
		t.Fatalf("without a token: %d, want 401", status)
	}
}

// sseMessage is one Server-Sent Events message.
type sseMessage struct{ id, event, data string }

// openStream opens GET /events as an event stream and returns its
// messages, read until the stream ends, and a function closing it.
func openStream(t *testing.T, s *testserver.Server, lastID string) (<-chan sseMessage, func()) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, s.URL+floeapi.Prefix+"/events?types=namespace.created", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseMessage, 100)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var m sseMessage
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if m.data != "" {
					out <- m
				}
				m = sseMessage{}
			case strings.HasPrefix(line, "id: "):
				m.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "event: "):
				m.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				m.data = strings.TrimPrefix(line, "data: ")
			}
		}
	}()
	return out, func() { resp.Body.Close() }
}

func next(t *testing.T, msgs <-chan sseMessage) sseMessage {
	t.Helper()
	select {
	case m, ok := <-msgs:
		if !ok {
			t.Fatal("the stream ended")
		}
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10s")
	}
	return sseMessage{}
}

func TestEventsStream(t *testing.T) {
	s := testserver.Start(t, testserver.Options{})
	msgs, closeStream := openStream(t, s, "")
	for _, ns := range []string{"a", "b", "c"} {
		createNamespace(t, s.Store, "main", ns, "alice")
	}
	var ids []string
	for _, want := range []string{"a", "b", "c"} {
		m := next(t, msgs)
		var ev changefeed.Event
		if err := json.Unmarshal([]byte(m.data), &ev); err != nil {
			t.Fatal(err)
		}
		if m.event != string(changefeed.NamespaceCreated) || ev.Content.Key[0] != want || m.id != ev.ID.String() {
			t.Fatalf("message %+v; want namespace.created of %s with its id", m, want)
		}
		ids = append(ids, m.id)
	}
	closeStream()

	// A client reconnecting with the id it last handled gets what follows.
	createNamespace(t, s.Store, "main", "d", "alice")
	msgs, closeStream = openStream(t, s, ids[0])
	defer closeStream()
	for _, want := range []string{"b", "c", "d"} {
		var ev changefeed.Event
		if err := json.Unmarshal([]byte(next(t, msgs).data), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Content.Key[0] != want {
			t.Fatalf("resumed stream: %s; want %s", ev.Content.Key[0], want)
		}
	}

	// Shutting down ends the stream instead of waiting for it.
	start := time.Now()
	s.Stop()
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("shutdown with an open stream took %s", took)
	}
	select {
	case _, ok := <-msgs:
		if ok {
			t.Fatal("a message after shutdown")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end at shutdown")
	}
}

// TestPolicyActivationIsAnEvent: the bundle a server activates at start
// is a policy.activated event on no reference, which only a reader of the
// catalog's own events (admin.events.read) receives.
func TestPolicyActivationIsAnEvent(t *testing.T) {
	s := eventPolicyServer(t)
	_, sams, _ := getEvents(t, s, "sam", "?types=policy.*")
	if len(sams.Events) != 1 || sams.Events[0].Policy == nil || sams.Events[0].Ref != "" ||
		!strings.HasSuffix(sams.Events[0].Policy.Source, "bundle") || sams.Events[0].Policy.Replica == "" {
		t.Fatalf("sam's policy events: %+v", sams.Events)
	}
	_, alices, _ := getEvents(t, s, "alice", "?types=policy.*")
	if len(alices.Events) != 0 || alices.Next != sams.Next {
		t.Fatalf("alice's policy events: %+v, next %s (sam's %s)", alices.Events, alices.Next, sams.Next)
	}
}
