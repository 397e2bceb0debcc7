package mergecheck

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/floe-catalog/floe/internal/backoff"
)

// ExternalCheck configures one external required check: a webhook that
// receives the candidate and answers pass or fail.
type ExternalCheck struct {
	// Name is what a request's RequiredChecks name it by.
	Name string
	// URL receives the POST.
	URL string
	// Secret keys the HMAC-SHA256 signature of every body
	// (SignatureHeader). Required: an unsigned candidate could be forged.
	Secret string
	// Timeout bounds one attempt; 0 means DefaultTimeout.
	Timeout time.Duration
	// Retries is how many times a failed attempt (no answer in time, a
	// transport error, 5xx, 429) is retried; 0 means DefaultRetries,
	// negative none.
	Retries int
	// Backoff is the first retry's delay; each retry doubles it up to
	// MaxBackoff, and each delay is drawn from its upper half (jitter). 0
	// means DefaultBackoff.
	Backoff time.Duration
	// Always runs the check for every candidate, required or not.
	Always bool
}

// Defaults for ExternalCheck.
const (
	DefaultTimeout = 30 * time.Second
	DefaultRetries = 2
	DefaultBackoff = 500 * time.Millisecond
	MaxBackoff     = 30 * time.Second
)

// Headers of a webhook request.
const (
	// SignatureHeader carries "sha256=" and the hex HMAC-SHA256 of the
	// body keyed by the check's secret (as GitHub's X-Hub-Signature-256).
	SignatureHeader = "X-Floe-Signature-256"
	// DeliveryHeader is one id per candidate and check, the same on every
	// attempt, so a check can recognise a retry.
	DeliveryHeader = "X-Floe-Delivery"
	AttemptHeader  = "X-Floe-Attempt"
	CheckHeader    = "X-Floe-Check"
)

// maxAnswerBytes bounds a webhook's answer.
const maxAnswerBytes = 64 << 10

// WebhookPayload is the body of a webhook request (README.md, "External
// checks").
type WebhookPayload struct {
	Version    int    `json:"version"`
	Check      string `json:"check"`
	DeliveryID string `json:"deliveryId"`
	// Candidate is the candidate commit id; Warehouse reads it
	// ("lake@<candidate>") at CatalogURI when floe knows its own URL.
	Candidate  string            `json:"candidate"`
	Warehouse  string            `json:"warehouse"`
	CatalogURI string            `json:"catalogUri,omitempty"`
	RequestID  string            `json:"requestId"`
	Principal  string            `json:"principal"`
	Target     map[string]string `json:"target"`
	Source     map[string]string `json:"source"`
	// Partitions are the touched partitions, table by table.
	Partitions []TouchedPartition `json:"partitions"`
	Summary    *Summary           `json:"summary"`
}

// TouchedPartition is one partition the candidate touches.
type TouchedPartition struct {
	Table  string   `json:"table"`
	Key    []string `json:"key"`
	SpecID int32    `json:"specId"`
	Path   string   `json:"path"`
}

// WebhookAnswer is what a check answers with status 200.
type WebhookAnswer struct {
	Passed *bool  `json:"passed"`
	Reason string `json:"reason"`
}

// Sign returns the SignatureHeader value for body.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// VerifySignature reports whether header is body's signature under secret,
// in constant time.
func VerifySignature(secret string, body []byte, header string) bool {
	return hmac.Equal([]byte(Sign(secret, body)), []byte(header))
}

func payloadOf(name string, s *Summary, catalogURI string) WebhookPayload {
	p := WebhookPayload{
		Version: SummaryVersion, Check: name, DeliveryID: uuid.NewString(), Candidate: s.Candidate, Warehouse: s.Warehouse,
		CatalogURI: catalogURI, RequestID: s.RequestID, Principal: s.Principal,
		Target:     map[string]string{"ref": s.Target.Ref, "head": s.Target.Head},
		Source:     map[string]string{"ref": s.Source.Ref, "hash": s.Source.Hash},
		Partitions: []TouchedPartition{}, Summary: s,
	}
	for _, t := range s.Tables {
		for _, pt := range t.Partitions {
			p.Partitions = append(p.Partitions, TouchedPartition{Table: t.Name, Key: t.Key, SpecID: pt.SpecID, Path: pt.Path})
		}
	}
	return p
}

// runWebhook delivers the candidate to one check and reads its verdict.
// Failures of the check (no answer, 5xx after the retries, a 4xx, a bad
// answer) are a failed result with the reason; the error is only for the
// caller's context ending.
func (v *Validator) runWebhook(ctx context.Context, cfg ExternalCheck, s *Summary) (CheckResult, error) {
	res := CheckResult{Name: cfg.Name}
	if cfg.Secret == "" || cfg.URL == "" {
		res.Reason = "check is misconfigured: it needs a URL and a secret"
		return res, nil
	}
	payload := payloadOf(cfg.Name, s, v.opts.CatalogURI)
	body, err := json.Marshal(payload)
	if err != nil {
		return res, fmt.Errorf("encode the payload of check %s: %w", cfg.Name, err)
	}
	timeout, retries, base := cfg.Timeout, cfg.Retries, cfg.Backoff
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	switch {
	case retries == 0:
		retries = DefaultRetries
	case retries < 0:
		retries = 0
	}
	if base <= 0 {
		base = DefaultBackoff
	}
	sig := Sign(cfg.Secret, body)
	var why []string
	for attempt := 0; ; attempt++ {
		passed, reason, retry := v.attempt(ctx, cfg, timeout, body, sig, payload.DeliveryID, attempt+1)
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("check %s: %w", cfg.Name, err)
		}
		if !retry {
			res.Passed, res.Reason = passed, reason
			if len(why) > 0 {
				res.Reason += fmt.Sprintf(" (after %d failed attempt(s): %s)", len(why), strings.Join(why, "; "))
			}
			return res, nil
		}
		why = append(why, reason)
		if attempt >= retries {
			res.Reason = fmt.Sprintf("no verdict after %d attempt(s): %s", attempt+1, strings.Join(why, "; "))
			return res, nil
		}
		// Jitter: retries of many candidates spread out.
		if err := (backoff.Policy{Base: base, Max: MaxBackoff}).Wait(ctx, attempt+1); err != nil {
			return res, fmt.Errorf("check %s: %w", cfg.Name, err)
		}
	}
}

// attempt posts once. retry says the failure may pass on another attempt.
func (v *Validator) attempt(ctx context.Context, cfg ExternalCheck, timeout time.Duration, body []byte, sig, delivery string, n int) (passed bool, reason string, retry bool) {
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, cfg.URL, bytes.NewReader(body))
	if err != nil {
		return false, fmt.Sprintf("bad URL: %v", err), false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "floe-mergecheck")
	req.Header.Set(SignatureHeader, sig)
	req.Header.Set(DeliveryHeader, delivery)
	req.Header.Set(AttemptHeader, strconv.Itoa(n))
	req.Header.Set(CheckHeader, cfg.Name)
	resp, err := v.opts.HTTPClient.Do(req)
	if err != nil {
		if errors.Is(actx.Err(), context.DeadlineExceeded) {
			return false, fmt.Sprintf("attempt %d: no answer within %s", n, timeout), true
		}
		return false, fmt.Sprintf("attempt %d: %v", n, err), true
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return false, fmt.Sprintf("attempt %d: reading the answer: %v", n, err), true
	}
	switch {
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return false, fmt.Sprintf("attempt %d: status %d %s", n, resp.StatusCode, snippet(raw)), true
	case resp.StatusCode != http.StatusOK:
		return false, fmt.Sprintf("check answered status %d %s", resp.StatusCode, snippet(raw)), false
	case len(raw) > maxAnswerBytes:
		return false, fmt.Sprintf("check answered more than %d bytes", maxAnswerBytes), false
	}
	var ans WebhookAnswer
	if err := json.Unmarshal(raw, &ans); err != nil || ans.Passed == nil {
		return false, fmt.Sprintf(`bad answer (want {"passed": bool, "reason": string}): %s`, snippet(raw)), false
	}
	reason = ans.Reason
	if reason == "" {
		reason = map[bool]string{true: "passed", false: "failed"}[*ans.Passed]
	}
	return *ans.Passed, reason, false
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if s == "" {
		return "(empty body)"
	}
	return strconv.Quote(s)
}
