package floeapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/catalog/eventhooks"
	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/rest/floeapi"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/versionstore"
)

// hookReceiver is a webhook on a loopback port that takes the events
// signed with secret and answers status.
type hookReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	events []string // "type ref"
	status int
}

func newHookReceiver(t *testing.T, secret string, status int) *hookReceiver {
	h := &hookReceiver{status: status}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !eventhooks.VerifySignature(secret, body, r.Header.Get(eventhooks.SignatureHeader)) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var ce eventhooks.CloudEvent
		if err := json.Unmarshal(body, &ce); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.status == http.StatusOK {
			h.events = append(h.events, strings.TrimPrefix(ce.Type, eventhooks.TypePrefix)+" "+ce.FloeRef)
		}
		w.WriteHeader(h.status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) got() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.events, "; ")
}

// TestWebhooksThroughTheServer: subscriptions configured on a server with
// a real policy get, each as its principal, the events it may read; a
// subscription whose receiver fails is dead-lettered, which GET /webhooks
// and /metrics show, and POST .../resume puts it back to work.
func TestWebhooksThroughTheServer(t *testing.T) {
	const secret = "hook-secret"
	samHook, aliceHook := newHookReceiver(t, secret, http.StatusOK), newHookReceiver(t, secret, http.StatusOK)
	broken := newHookReceiver(t, secret, http.StatusInternalServerError)
	sub := func(name, url, principal string) eventhooks.Subscription {
		return eventhooks.Subscription{Name: name, URL: url, Secret: secret, Principal: principal, FromStart: true,
			Filter:  eventhooks.Filter{Types: []changefeed.Type{changefeed.NamespaceCreated}},
			Backoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, MaxAttempts: 3}
	}
	s := eventPolicyServer(t, func(o *testserver.Options) {
		o.EventWebhooks = func(c *assemble.EventWebhooks) {
			c.Subscriptions = []eventhooks.Subscription{
				sub("sam", samHook.srv.URL, "sam"), sub("alice", aliceHook.srv.URL, "alice"), sub("broken", broken.srv.URL, "alice"),
			}
			c.Poll = 50 * time.Millisecond
		}
	})
	main, err := s.Store.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: "secret/x", Type: versionstore.Branch, Target: main.Head, Principal: "sam"}); err != nil {
		t.Fatal(err)
	}
	createNamespace(t, s.Store, "secret/x", "hidden", "sam")
	createNamespace(t, s.Store, "main", "open", "alice")

	deadline := time.Now().Add(20 * time.Second)
	for samHook.got() != "namespace.created secret/x; namespace.created main" || aliceHook.got() != "namespace.created main" {
		if time.Now().After(deadline) {
			t.Fatalf("sam's hook got %q, alice's %q", samHook.got(), aliceHook.got())
		}
		time.Sleep(20 * time.Millisecond)
	}

	var st eventhooks.Status
	for {
		if status, body := call(t, s, "alice", http.MethodGet, "/webhooks/broken", nil, &st); status != http.StatusOK {
			t.Fatalf("GET /webhooks/broken: %d %s", status, body)
		}
		if st.State != nil && st.State.Status == eventhooks.StatusDeadLetter {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("broken is %+v", st.State)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st.State.Attempts != 3 || !strings.Contains(st.State.LastError, "status 500") || st.State.PendingType != "namespace.created" || st.State.PendingRef != "main" {
		t.Fatalf("dead letter state %+v", st.State)
	}
	_, metrics := get(t, s.URL+"/metrics")
	if !strings.Contains(string(metrics), `floe_event_webhook_dead_letter{subscription="broken"} 1`) ||
		!strings.Contains(string(metrics), `floe_event_webhook_attempts_total{outcome="failed",subscription="broken"} 3`) {
		t.Fatalf("metrics lack the dead letter:\n%s", grepLines(string(metrics), "floe_event_webhook"))
	}
	var list floeapi.WebhookList
	if status, body := call(t, s, "alice", http.MethodGet, "/webhooks", nil, &list); status != http.StatusOK || len(list.Subscriptions) != 3 {
		t.Fatalf("GET /webhooks: %d %s", status, body)
	}
	if strings.Contains(fmtJSON(t, list), secret) {
		t.Fatal("GET /webhooks shows a secret")
	}
	if status, _ := call(t, s, "alice", http.MethodPost, "/webhooks/nope/resume", nil, nil); status != http.StatusNotFound {
		t.Fatalf("resume of an unknown subscription: %d", status)
	}
	if status, body := call(t, s, "alice", http.MethodPost, "/webhooks/broken/resume", floeapi.ResumeWebhookRequest{Skip: true}, &st); status != http.StatusOK || st.State.Status != eventhooks.StatusActive {
		t.Fatalf("resume: %d %s", status, body)
	}
	if status, _ := call(t, s, "alice", http.MethodPost, "/webhooks/broken/resume", nil, nil); status != http.StatusConflict {
		t.Fatalf("resume of an active subscription: %d, want 409", status)
	}
}

func fmtJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
