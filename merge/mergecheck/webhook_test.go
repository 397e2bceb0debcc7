package mergecheck

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// hook is a webhook on a real loopback server that answers with
// answer(attempt), after verifying the signature with its secret.
type hook struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	hdrs   []http.Header
}

func startHook(t *testing.T, secret string, answer func(n int, w http.ResponseWriter, r *http.Request)) *hook {
	h := &hook{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		h.bodies = append(h.bodies, body)
		h.hdrs = append(h.hdrs, r.Header.Clone())
		n := len(h.bodies)
		h.mu.Unlock()
		if r.Method != http.MethodPost || !VerifySignature(secret, body, r.Header.Get(SignatureHeader)) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		answer(n, w, r)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hook) attempts() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.bodies)
}

func answerJSON(passed bool, reason string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"passed": passed, "reason": reason})
	}
}

func testSummary() *Summary {
	s := &Summary{Version: SummaryVersion, Candidate: "c0ffee", RequestID: "r1", Principal: "pipeline", Warehouse: "lake@c0ffee",
		Tables: []TableSummary{{Key: []string{"ns", "events"}, Name: "ns.events", Change: ChangeUpdated,
			Partitions: []PartitionSummary{{Path: "day=2026-08-20", AddedRecords: 3}}}}, OtherChanges: []KeyChange{}}
	s.Target.Ref, s.Target.Head = "main", "4ead"
	s.Source.Ref = "dev"
	return s
}

func webhookValidator() *Validator {
	return &Validator{opts: Options{HTTPClient: &http.Client{}, CatalogURI: "http://127.0.0.1:8181"}}
}

func TestWebhookSignedPayload(t *testing.T) {
	h := startHook(t, "right", answerJSON(true, "looks fine"))
	v := webhookValidator()
	r, err := v.runWebhook(t.Context(), ExternalCheck{Name: "dq", URL: h.srv.URL, Secret: "right", Backoff: time.Millisecond}, testSummary())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Passed || r.Reason != "looks fine" || r.Name != "dq" {
		t.Fatalf("result %+v", r)
	}
	var p WebhookPayload
	if err := json.Unmarshal(h.bodies[0], &p); err != nil {
		t.Fatal(err)
	}
	if p.Candidate != "c0ffee" || p.Warehouse != "lake@c0ffee" || p.CatalogURI != "http://127.0.0.1:8181" || p.Check != "dq" ||
		len(p.Partitions) != 1 || p.Partitions[0].Table != "ns.events" || p.Partitions[0].Path != "day=2026-08-20" ||
		p.Summary == nil || p.Summary.Tables[0].Partitions[0].AddedRecords != 3 {
		t.Fatalf("payload %s", h.bodies[0])
	}
	if got := h.hdrs[0].Get(DeliveryHeader); got == "" || got != p.DeliveryID {
		t.Errorf("delivery header %q, payload %q", got, p.DeliveryID)
	}

	// Signed with another secret, the hook refuses it: a 4xx fails at
	// once, without retries.
	h2 := startHook(t, "right", answerJSON(true, ""))
	r, err = v.runWebhook(t.Context(), ExternalCheck{Name: "dq", URL: h2.srv.URL, Secret: "wrong", Backoff: time.Millisecond}, testSummary())
	if err != nil {
		t.Fatal(err)
	}
	if r.Passed || !strings.Contains(r.Reason, "status 401") || h2.attempts() != 1 {
		t.Fatalf("wrong secret: %+v after %d attempt(s)", r, h2.attempts())
	}
}

func TestWebhookRetryThenPass(t *testing.T) {
	h := startHook(t, "s", func(n int, w http.ResponseWriter, r *http.Request) {
		if n < 3 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		answerJSON(true, "ok")(n, w, r)
	})
	r, err := webhookValidator().runWebhook(t.Context(), ExternalCheck{Name: "dq", URL: h.srv.URL, Secret: "s", Retries: 2, Backoff: time.Millisecond}, testSummary())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Passed || h.attempts() != 3 || !strings.Contains(r.Reason, "after 2 failed attempt(s)") || !strings.Contains(r.Reason, "status 503") {
		t.Fatalf("result %+v after %d attempt(s)", r, h.attempts())
	}
	// Every attempt carries the same delivery and body, numbered.
	for i, hd := range h.hdrs {
		if hd.Get(DeliveryHeader) != h.hdrs[0].Get(DeliveryHeader) || string(h.bodies[i]) != string(h.bodies[0]) || hd.Get(AttemptHeader) != string(rune('1'+i)) {
			t.Errorf("attempt %d: delivery %q attempt %q", i+1, hd.Get(DeliveryHeader), hd.Get(AttemptHeader))
		}
	}
}

func TestWebhookTimeoutFails(t *testing.T) {
	release := make(chan struct{})
	h := startHook(t, "s", func(_ int, w http.ResponseWriter, r *http.Request) {
		select { // never answers in time
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) })
	r, err := webhookValidator().runWebhook(t.Context(), ExternalCheck{Name: "slow", URL: h.srv.URL, Secret: "s", Timeout: 50 * time.Millisecond, Retries: 1, Backoff: time.Millisecond}, testSummary())
	if err != nil {
		t.Fatal(err)
	}
	if r.Passed || h.attempts() != 2 || !strings.Contains(r.Reason, "no verdict after 2 attempt(s)") || !strings.Contains(r.Reason, "no answer within 50ms") {
		t.Fatalf("result %+v after %d attempt(s)", r, h.attempts())
	}
}

func TestWebhookBadAnswers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   func(int, http.ResponseWriter, *http.Request)
		attempts int
		reason   string
	}{
		{"not json", func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }, 1, `bad answer (want {"passed": bool, "reason": string}): "ok"`},
		{"no verdict", func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"reason": "fine"}`) }, 1, "bad answer"},
		{"verdict not a bool", func(_ int, w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, `{"passed": "yes"}`) }, 1, "bad answer"},
		{"failed", answerJSON(false, "3 duplicate rows in day=2026-08-20"), 1, "3 duplicate rows in day=2026-08-20"},
		{"failed without reason", answerJSON(false, ""), 1, "failed"},
		{"not found", func(_ int, w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) }, 1, "check answered status 404"},
		{"always 500", func(_ int, w http.ResponseWriter, _ *http.Request) { http.Error(w, "boom", 500) }, 3, "no verdict after 3 attempt(s): attempt 1: status 500 \"boom\"; attempt 2"},
		{"no content", func(_ int, w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }, 1, "check answered status 204"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startHook(t, "s", tc.answer)
			r, err := webhookValidator().runWebhook(t.Context(), ExternalCheck{Name: "dq", URL: h.srv.URL, Secret: "s", Backoff: time.Millisecond}, testSummary())
			if err != nil {
				t.Fatal(err)
			}
			if r.Passed || h.attempts() != tc.attempts || !strings.Contains(r.Reason, tc.reason) {
				t.Fatalf("result %+v after %d attempt(s), want a failure with %q after %d", r, h.attempts(), tc.reason, tc.attempts)
			}
		})
	}
}

func TestWebhookCallerGivesUp(t *testing.T) {
	h := startHook(t, "s", func(_ int, w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", 503) })
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := webhookValidator().runWebhook(ctx, ExternalCheck{Name: "dq", URL: h.srv.URL, Secret: "s"}, testSummary()); err == nil {
		t.Fatal("a cancelled validation gave a verdict")
	}
}

func TestNewRefusesBadChecks(t *testing.T) {
	for name, ext := range map[string][]ExternalCheck{
		"no name":      {{URL: "http://x", Secret: "s"}},
		"builtin name": {{Name: CheckLineage, URL: "http://x", Secret: "s"}},
		"twice":        {{Name: "a", URL: "http://x", Secret: "s"}, {Name: "a", URL: "http://y", Secret: "s"}},
		"no secret":    {{Name: "a", URL: "http://x"}},
	} {
		if _, err := New(Options{Store: nopStore{}, External: ext}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestSignatureVector: the same vector conformance/pyiceberg's
// test_mergecheck_example.py checks the Python example's HMAC with.
func TestSignatureVector(t *testing.T) {
	body := []byte(`{"candidate":"c0ffee"}`)
	const want = "sha256=574af82a36ba23b11442182e282a9e13f9d03811dae7f21cfbc3eafd51d7f21f"
	if got := Sign("s3cr3t", body); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
	if !VerifySignature("s3cr3t", body, want) || VerifySignature("other", body, want) || VerifySignature("s3cr3t", append(body, ' '), want) {
		t.Fatal("VerifySignature accepts what it should not, or refuses the vector")
	}
}
