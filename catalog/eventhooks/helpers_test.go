package eventhooks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/floe-catalog/floe/catalog/eventhooks"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

const testSecret = "s3cret"

func openStore(t testing.TB, dir string) *versionstore.Store {
	t.Helper()
	be, err := pebblebackend.Open(dir, pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := versionstore.Open(context.Background(), be, versionstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// commit puts a new namespace key on branch (new each time, so no update
// needs a content id) and returns the commit.
func commit(t testing.TB, s *versionstore.Store, branch string, key ...string) versionstore.Hash {
	t.Helper()
	for {
		r, err := s.GetRef(branch)
		if err != nil {
			t.Error(err)
			return versionstore.Hash{}
		}
		res, err := s.Commit(context.Background(), versionstore.CommitRequest{Branch: branch, Expected: r.Head, Committer: "test",
			Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey(key), Content: &versionstore.Content{Type: versionstore.Namespace}}}})
		if err == nil {
			return res.Commit.Hash
		}
		t.Error(err)
		return versionstore.Hash{}
	}
}

func createBranch(t testing.TB, s *versionstore.Store, name string) {
	t.Helper()
	r, err := s.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateRef(context.Background(), versionstore.CreateRefRequest{Name: name, Type: versionstore.Branch, Target: r.Head, Principal: "test"}); err != nil {
		t.Fatal(err)
	}
}

// delivery is one request a receiver took (answered 2xx).
type delivery struct {
	sub     string
	attempt string
	ce      eventhooks.CloudEvent
	at      time.Time
}

// receiver is a webhook on a loopback port. It checks every request's
// signature (answering 401 to a bad one, which the test then fails on),
// and answers with status(n) for the n-th request it receives (1 first),
// after stalling while stall is open.
type receiver struct {
	t      testing.TB
	srv    *httptest.Server
	secret string

	mu       sync.Mutex
	requests int
	entered  int // requests that arrived, stalled or not
	attempts []time.Time
	got      []delivery
	status   func(n int) int
	stall    chan struct{}
	badSig   int
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{t: t, secret: testSecret, status: func(int) int { return http.StatusNoContent }}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

// setStatus, setSecret and setStall change the receiver while its server
// runs. They take the lock serve reads under: a request can come from a
// child process, and nothing inside this process then orders the change
// before the read.
func (r *receiver) setStatus(status func(n int) int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = status
}

func (r *receiver) setSecret(secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = secret
}

func (r *receiver) setStall(stall chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stall = stall
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return
	}
	r.mu.Lock()
	stall := r.stall
	r.entered++
	r.mu.Unlock()
	if stall != nil {
		select {
		case <-stall:
		case <-req.Context().Done():
			return
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	r.attempts = append(r.attempts, time.Now())
	if !eventhooks.VerifySignature(r.secret, body, req.Header.Get(eventhooks.SignatureHeader)) {
		r.badSig++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if ct := req.Header.Get("Content-Type"); ct != eventhooks.ContentType {
		r.t.Errorf("Content-Type %q", ct)
	}
	status := r.status(r.requests)
	if status/100 == 2 {
		var ce eventhooks.CloudEvent
		if err := json.Unmarshal(body, &ce); err != nil {
			r.t.Errorf("body %s: %v", body, err)
		}
		r.got = append(r.got, delivery{sub: req.Header.Get(eventhooks.SubscriptionHeader), attempt: req.Header.Get(eventhooks.AttemptHeader), ce: ce, at: time.Now()})
	}
	w.WriteHeader(status)
	fmt.Fprint(w, http.StatusText(status))
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runService runs svc until the test ends.
func runService(t testing.TB, svc *eventhooks.Service) context.CancelFunc {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	stop := func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

func subscription(name, url string) eventhooks.Subscription {
	return eventhooks.Subscription{Name: name, URL: url, Secret: testSecret, Principal: "svc-" + name, FromStart: true,
		Backoff: 10 * time.Millisecond, MaxBackoff: 40 * time.Millisecond, Timeout: 5 * time.Second}
}
