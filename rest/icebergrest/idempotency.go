package icebergrest

// Idempotency-Key (Iceberg REST spec 1.11): a client sends a fresh UUID
// with a mutation and sends the same key again when it retries, e.g. after
// a timeout that left it unsure whether the first attempt happened. The
// server applies the mutation at most once and answers every attempt with
// the response of the one that ran.
//
// The outcome of a keyed request is a versionstore.Record: the request's
// fingerprint and the response (status, headers, body). A request that
// ends in a catalog commit builds its response before committing and the
// record rides in the commit (CommitRequest.Record), so record and commit
// become durable in one batch: there is no moment at which the commit
// exists and its record does not. A client that lost the response of a
// commit, or a server that crashed right after it, is answered from that
// record on retry, and nothing is committed again. Responses that commit
// nothing (4xx, no-op updates, staged creates) are recorded on their own
// with PutRecord. 5xx answers are never recorded: the retry runs again.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/versionstore"
)

// DefaultIdempotencyKeyLifetime is how long an idempotent request's outcome
// is kept and replayed unless Deps says otherwise.
const DefaultIdempotencyKeyLifetime = 30 * time.Minute

const headerIdempotencyKey = "Idempotency-Key"

// recordKeyPrefix sets the facade's records apart from other users of the
// store's record space.
const recordKeyPrefix = "iceberg/idempotency/"

// maxRecordedBody bounds the response body kept for replay. Table metadata
// larger than this is not recorded (the request is then not protected
// against repetition) rather than made into a record the store refuses.
const maxRecordedBody = 16 << 20

// outcomeVersion is the version of the record value format.
const outcomeVersion = 1

// replayedHeaders are the response headers a record keeps.
var replayedHeaders = []string{"Content-Type", "X-Content-Type-Options", "ETag"}

// idempotency is the facade's state for Idempotency-Key handling.
type idempotency struct {
	lifetime time.Duration
	// sweepEvery is the pause between expiry sweeps.
	sweepEvery time.Duration

	mu sync.Mutex
	// inflight holds the request running with each record key. The store
	// has one process (Pebble locks its directory), so coalescing in the
	// process is enough.
	inflight map[string]*flight
}

// flight is a keyed request in progress. Requests with the same key wait
// for it and are answered with its outcome.
type flight struct {
	done chan struct{}
	// Set before done is closed, when the request ended with a final
	// outcome (see finalStatus); nil otherwise, and then a waiter runs the
	// request itself.
	fingerprint string
	outcome     *reply
}

func newIdempotency(lifetime time.Duration) *idempotency {
	return &idempotency{
		lifetime:   lifetime,
		sweepEvery: min(time.Minute, max(lifetime, time.Second)),
		inflight:   map[string]*flight{},
	}
}

// join returns either own, a flight the caller now runs alone and must
// end with finish, or finished, the flight of a request with the same key
// that the caller waited for and that ended with a final outcome. waited
// is called once if the caller had to wait.
func (k *idempotency) join(ctx context.Context, key string, waited func()) (own, finished *flight, err error) {
	counted := false
	for {
		k.mu.Lock()
		f, busy := k.inflight[key]
		if !busy {
			f = &flight{done: make(chan struct{})}
			k.inflight[key] = f
			k.mu.Unlock()
			return f, nil, nil
		}
		k.mu.Unlock()
		if !counted {
			waited()
			counted = true
		}
		select {
		case <-f.done:
			if f.outcome != nil {
				return nil, f, nil
			}
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// finish ends an own flight, handing its outcome (nil if not final) to
// the requests waiting for it.
func (k *idempotency) finish(key string, f *flight, fingerprint string, outcome *reply) {
	k.mu.Lock()
	delete(k.inflight, key)
	k.mu.Unlock()
	f.fingerprint, f.outcome = fingerprint, outcome
	close(f.done)
}

// keyedRequest is one request sent with an Idempotency-Key; it travels in
// the request context so that commit can attach the record.
type keyedRequest struct {
	// recordKey scopes the client's key: principal, prefix, method and
	// route template, so the same key on another route or catalog is
	// another key.
	recordKey string
	// fingerprint is a hash of method, path, query and body: a key sent
	// again with another request is refused, not answered with the other
	// request's response.
	fingerprint string
	// recorded is set once a commit carried the request's outcome.
	recorded bool
}

type keyedRequestKey struct{}

// keyedRequestOf returns the request's idempotency state, or nil.
func keyedRequestOf(r *http.Request) *keyedRequest {
	kr, _ := r.Context().Value(keyedRequestKey{}).(*keyedRequest)
	return kr
}

// record is the store record of a reply to kr, or nil when the reply is
// too large to keep.
func (kr *keyedRequest) record(rp *reply, expires time.Time) *versionstore.Record {
	if rp.bodyLen() > maxRecordedBody {
		return nil
	}
	return &versionstore.Record{Key: kr.recordKey, Value: encodeOutcome(kr.fingerprint, rp), Expires: expires}
}

// outcomeHead is the first line of a record value; the response body
// follows it verbatim, so a replay is byte for byte the original.
type outcomeHead struct {
	Version     int               `json:"v"`
	Fingerprint string            `json:"request"`
	Status      int               `json:"status"`
	Header      map[string]string `json:"header,omitempty"`
}

func encodeOutcome(fingerprint string, rp *reply) []byte {
	head, _ := json.Marshal(outcomeHead{Version: outcomeVersion, Fingerprint: fingerprint, Status: rp.status, Header: rp.header})
	// json.Marshal escapes newlines inside strings, so the first newline
	// ends the head.
	out := make([]byte, 0, len(head)+1+rp.bodyLen())
	out = append(out, head...)
	out = append(out, '\n')
	return rp.appendBody(out)
}

func decodeOutcome(b []byte) (fingerprint string, rp *reply, err error) {
	line, body, ok := bytes.Cut(b, []byte{'\n'})
	if !ok {
		return "", nil, errors.New("no header line")
	}
	var head outcomeHead
	if err := json.Unmarshal(line, &head); err != nil {
		return "", nil, err
	}
	if head.Version != outcomeVersion || head.Status < 100 || head.Status > 599 {
		return "", nil, fmt.Errorf("unsupported outcome version %d or status %d", head.Version, head.Status)
	}
	return head.Fingerprint, &reply{status: head.Status, header: head.Header, body: [][]byte{body}}, nil
}

// finalStatus reports whether an answer with this status is the request's
// final outcome, replayed to a retry: success, and the client errors that
// retrying the same request cannot change (after the server's own commit
// retries). 5xx answers, 403 and 413 are not final: a retry runs again.
func finalStatus(status int) bool {
	switch status {
	case http.StatusOK, http.StatusCreated, http.StatusNoContent,
		http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity:
		return true
	}
	return false
}

// parseIdempotencyKey accepts one header value in the 36-character UUID
// form; the spec's clients send UUIDv7, any version is taken.
func parseIdempotencyKey(values []string) (string, error) {
	if len(values) != 1 {
		return "", badRequest("send one %s header, not %d", headerIdempotencyKey, len(values))
	}
	k := strings.TrimSpace(values[0])
	if len(k) != 36 {
		return "", badRequest("invalid %s %q: it must be a UUID of 36 characters", headerIdempotencyKey, truncate(k, 64))
	}
	if _, err := uuid.Parse(k); err != nil {
		return "", badRequest("invalid %s %q: it must be a UUID of 36 characters", headerIdempotencyKey, k)
	}
	return strings.ToLower(k), nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// withIdempotency wraps the handler of a route the spec marks with
// Idempotency-Key. Requests without the header, or with keys turned off,
// go straight through.
func (a *api) withIdempotency(template string, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		values := r.Header.Values(headerIdempotencyKey)
		if len(values) == 0 || a.ik == nil {
			next(w, r)
			return
		}
		kr, err := a.keyRequest(r, template, values)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		a.serveKeyed(w, r.WithContext(context.WithValue(r.Context(), keyedRequestKey{}, kr)), kr, next)
	}
}

// keyRequest validates the key, reads the body (it is part of the
// fingerprint; the handler gets it again) and derives the record key.
func (a *api) keyRequest(r *http.Request, template string, values []string) (*keyedRequest, error) {
	key, err := parseIdempotencyKey(values)
	if err != nil {
		return nil, err
	}
	var body []byte
	if r.Body != nil {
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, badRequest("reading the request body: %v", err)
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))

	scope := sha256.Sum256([]byte(strings.Join([]string{a.principal(r), mux.Vars(r)["prefix"], r.Method, template}, "\x00")))
	fp := sha256.New()
	for _, part := range []string{r.Method, r.URL.EscapedPath(), r.URL.RawQuery} {
		fp.Write([]byte(part))
		fp.Write([]byte{0})
	}
	fp.Write(body)
	return &keyedRequest{
		recordKey:   recordKeyPrefix + key + "/" + hex.EncodeToString(scope[:16]),
		fingerprint: hex.EncodeToString(fp.Sum(nil)),
	}, nil
}

// serveKeyed answers a keyed request: from its record if an earlier
// request with the key finished, else by running the handler and recording
// a final outcome. Requests with the same key run one at a time: a second
// one waits for the first and is answered with its outcome.
func (a *api) serveKeyed(w http.ResponseWriter, r *http.Request, kr *keyedRequest, next http.HandlerFunc) {
	ctx := r.Context()
	own, finished, err := a.ik.join(ctx, kr.recordKey, a.metrics.ikWaits.Inc)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if finished != nil {
		a.answerFromOutcome(w, r, kr, finished.fingerprint, finished.outcome)
		return
	}
	var (
		fingerprint string
		outcome     *reply
	)
	finish := sync.OnceFunc(func() { a.ik.finish(kr.recordKey, own, fingerprint, outcome) })
	defer finish() // also on a panic: waiters then run the request themselves

	fingerprint, outcome, err = a.loadOutcome(ctx, kr.recordKey)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if outcome != nil {
		finish()
		a.answerFromOutcome(w, r, kr, fingerprint, outcome)
		return
	}

	c := &capture{w: w}
	next(c, r)
	rp := c.reply()
	if kr.recorded || finalStatus(rp.status) {
		fingerprint, outcome = kr.fingerprint, rp
	}
	if !kr.recorded && finalStatus(rp.status) {
		if rec := kr.record(rp, a.now().Add(a.ik.lifetime)); rec != nil {
			// The outcome is settled even if the client has gone.
			if err := a.store.PutRecord(context.WithoutCancel(ctx), *rec); err != nil {
				a.logger.WarnContext(ctx, "iceberg: could not record the outcome of an idempotent request; a retry will run it again",
					"error", err, "request_id", requestID(w))
			} else {
				a.metrics.ikRecords.WithLabelValues("alone").Inc()
			}
		}
	}
	finish()
	c.flush()
}

// answerFromOutcome answers a request whose key already has a final
// outcome: that outcome if the request is the same, else 422.
func (a *api) answerFromOutcome(w http.ResponseWriter, r *http.Request, kr *keyedRequest, fingerprint string, outcome *reply) {
	if fingerprint != kr.fingerprint {
		a.metrics.ikMismatches.Inc()
		a.fail(w, r, newError(http.StatusUnprocessableEntity, typeUnprocessable,
			"%s was already used for a different request (method, path, query or body differ); use a new key for a new request", headerIdempotencyKey))
		return
	}
	a.metrics.ikReplays.Inc()
	a.logger.DebugContext(r.Context(), "iceberg idempotent replay", "method", r.Method, "path", r.URL.EscapedPath(),
		"status", outcome.status, "request_id", requestID(w))
	outcome.write(w, &a.joins)
}

// loadOutcome reads the recorded outcome under key, if it has not expired
// by the facade's clock.
func (a *api) loadOutcome(ctx context.Context, key string) (string, *reply, error) {
	rec, err := a.store.GetRecord(ctx, key)
	if errors.Is(err, versionstore.ErrRecordNotFound) {
		return "", nil, nil
	}
	if err != nil {
		return "", nil, fmt.Errorf("read idempotency record %s: %w", key, err)
	}
	if !a.now().Before(rec.Expires) {
		return "", nil, nil
	}
	fp, rp, err := decodeOutcome(rec.Value)
	if err != nil {
		// Running the request again might repeat a commit; refuse instead.
		return "", nil, fmt.Errorf("decode idempotency record %s: %w", key, err)
	}
	return fp, rp, nil
}

// capture holds a handler's response until it is recorded. Headers go to
// the real writer's map at once (the request id is already there).
type capture struct {
	w      http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (c *capture) Header() http.Header { return c.w.Header() }

func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *capture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return c.body.Write(b)
}

// reply is the captured response as a record keeps it.
func (c *capture) reply() *reply {
	rp := &reply{status: c.status, body: [][]byte{c.body.Bytes()}}
	if rp.status == 0 {
		rp.status = http.StatusOK
	}
	for _, k := range replayedHeaders {
		if v := c.w.Header().Get(k); v != "" {
			if rp.header == nil {
				rp.header = map[string]string{}
			}
			rp.header[k] = v
		}
	}
	return rp
}

// flush sends the captured response.
func (c *capture) flush() {
	status := c.status
	if status == 0 {
		status = http.StatusOK
	}
	c.w.WriteHeader(status)
	if c.body.Len() > 0 {
		_, _ = c.w.Write(c.body.Bytes())
	}
}

// expireRecords deletes expired records every sweepEvery until ctx ends.
// GetRecord already ignores expired records; this keeps them from piling
// up.
func (a *api) expireRecords(ctx context.Context) {
	t := time.NewTicker(a.ik.sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := a.store.ExpireRecords(ctx, a.now())
		a.metrics.ikExpired.Add(float64(n))
		switch {
		case errors.Is(err, versionstore.ErrClosed):
			return
		case err != nil && ctx.Err() == nil:
			a.logger.WarnContext(ctx, "iceberg: expiring idempotency records failed", "error", err)
		case n > 0:
			a.logger.DebugContext(ctx, "iceberg: expired idempotency records", "count", n)
		}
	}
}

// isoDuration formats d as an ISO-8601 duration, e.g. PT30M, PT1H30M,
// PT1.5S, as CatalogConfig's idempotency-key-lifetime wants it.
func isoDuration(d time.Duration) string {
	var b strings.Builder
	b.WriteString("PT")
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	d -= m * time.Minute
	if h > 0 {
		b.WriteString(strconv.FormatInt(int64(h), 10) + "H")
	}
	if m > 0 {
		b.WriteString(strconv.FormatInt(int64(m), 10) + "M")
	}
	if d > 0 || (h == 0 && m == 0) {
		b.WriteString(strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "S")
	}
	return b.String()
}
