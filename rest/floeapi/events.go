package floeapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
)

// The change feed: GET /events pages through the catalog's events after a
// cursor, waits for new ones when asked to (long polling), and streams
// them as Server-Sent Events to a client that accepts text/event-stream.
// A caller receives only the events on references it may read: the
// policy's `read` decision on the event's branch or tag, the decision
// that reading a table on that branch takes.

// Bounds of a long poll.
const (
	maxEventWait = 2 * time.Minute
	// streamHeartbeat is how often a quiet stream sends a comment, so
	// that proxies and clients see the connection alive.
	streamHeartbeat = 15 * time.Second
)

// EventPage is the answer of GET /events.
type EventPage struct {
	Events []changefeed.Event `json:"events"`
	// Next is the cursor to pass as after to read on.
	Next changefeed.Cursor `json:"next"`
}

// streamed is a handler's answer that writes the response itself.
type streamed func(w http.ResponseWriter)

func (a *API) eventRoutes() []route {
	return []route{{http.MethodGet, "/events", a.readEvents}}
}

// eventQuery reads the query parameters of GET /events: after (a cursor,
// "now" for the current end, or nothing for the beginning; a stream's
// Last-Event-ID header wins), ref and types (repeatable or
// comma-separated), limit, and wait (a duration, long polling).
func (a *API) eventQuery(r *http.Request) (changefeed.Query, time.Duration, error) {
	v := r.URL.Query()
	var q changefeed.Query
	after := v.Get("after")
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		after = id
	}
	switch after {
	case "now":
		head, err := a.events.Head(r.Context())
		if err != nil {
			return q, 0, err
		}
		q.After = head
	default:
		c, err := changefeed.ParseCursor(after)
		if err != nil {
			return q, 0, badRequest("%v", err)
		}
		q.After = c
	}
	q.Refs = listParam(v["ref"])
	types, err := changefeed.ParseTypes(listParam(v["types"]))
	if err != nil {
		return q, 0, badRequest("%v", err)
	}
	q.Types = types
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > changefeed.MaxLimit {
			return q, 0, badRequest("limit %q: want a number from 1 to %d", s, changefeed.MaxLimit)
		}
		q.Limit = n
	}
	var wait time.Duration
	if s := v.Get("wait"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 || d > maxEventWait {
			return q, 0, badRequest("wait %q: want a duration from 0s to %s", s, maxEventWait)
		}
		wait = d
	}
	return q, wait, nil
}

// listParam splits repeated and comma-separated values.
func listParam(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

func (a *API) readEvents(r *http.Request) (any, error) {
	if a.events == nil {
		return nil, notConfigured("the change feed")
	}
	q, wait, err := a.eventQuery(r)
	if err != nil {
		return nil, err
	}
	if strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
		return streamed(func(w http.ResponseWriter) { a.streamEvents(w, r, q) }), nil
	}
	if wait == 0 {
		q.Allow = a.eventFilter(r)
		page, err := a.events.Read(r.Context(), q)
		if err != nil {
			return nil, err
		}
		return eventPage(page), nil
	}
	return &longRunning{timeout: wait + 30*time.Second, run: func() (any, error) {
		ctx, cancel := context.WithTimeout(r.Context(), wait)
		defer cancel()
		q.Allow = a.eventFilter(r)
		page, err := a.events.Wait(ctx, q)
		if err != nil && !errors.Is(err, changefeed.ErrDraining) {
			return nil, err
		}
		return eventPage(page), nil
	}}, nil
}

func eventPage(p *changefeed.Page) EventPage {
	evs := p.Events
	if evs == nil {
		evs = []changefeed.Event{}
	}
	return EventPage{Events: evs, Next: p.Next}
}

// eventFilter returns the policy filter of one page (nil when nobody is
// asked): one decision per reference, since a read is decided on the
// reference alone. A stream asks anew for each page, so a changed policy
// applies to what it sends next.
func (a *API) eventFilter(r *http.Request) func(context.Context, *changefeed.Event) (bool, error) {
	if !a.guard.Enabled() {
		return nil
	}
	decided := map[policy.Ref]bool{}
	return func(_ context.Context, ev *changefeed.Event) (bool, error) {
		ref := policy.Ref{Name: ev.Ref, Type: policy.RefBranch}
		if ev.RefType == "TAG" {
			ref.Type = policy.RefTag
		}
		if ev.Ref == "" {
			ref = policy.Ref{} // an event on no reference
		}
		if ok, seen := decided[ref]; seen {
			return ok, nil
		}
		var err error
		if ev.Ref == "" {
			err = a.guard.Check(r, policy.Input{Action: policy.ActionEventsRead})
		} else {
			err = a.guard.Read(r, ref)
		}
		if err != nil && !errors.As(err, new(*authz.DeniedError)) {
			return false, err
		}
		decided[ref] = err == nil
		return err == nil, nil
	}
}

// streamEvents sends q's events as Server-Sent Events until the client
// goes away or the server shuts down: each event as a message whose id is
// its cursor (so a reconnecting client's Last-Event-ID resumes just past
// it) and whose event name is its type; a message with only an id when
// the cursor moved past events the client does not receive; a comment as
// a heartbeat. An error after the stream started is sent as an "error"
// message in the API's error model, and ends the stream.
func (a *API) streamEvents(w http.ResponseWriter, r *http.Request, q changefeed.Query) {
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a stream outlives the server's write timeout
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, "retry: 2000\n\n"); err != nil {
		return
	}
	_ = rc.Flush()
	sent := q.After
	for {
		ctx, cancel := context.WithTimeout(r.Context(), streamHeartbeat)
		q.Allow = a.eventFilter(r)
		page, err := a.events.Wait(ctx, q)
		cancel()
		switch {
		case r.Context().Err() != nil, errors.Is(err, changefeed.ErrDraining):
			return
		case err != nil:
			ae := classify(err)
			a.logger.ErrorContext(r.Context(), "change feed stream failed", "after", q.After.String(), "error", err)
			b, _ := json.Marshal(ErrorBody{Error: ErrorDetail{Status: ae.status, Code: ae.code, Message: ae.msg}})
			_, _ = fmt.Fprintf(w, "event: error\ndata: %s\n\n", b)
			_ = rc.Flush()
			return
		}
		var buf strings.Builder
		for i := range page.Events {
			ev := &page.Events[i]
			b, err := json.Marshal(ev)
			if err != nil {
				return
			}
			fmt.Fprintf(&buf, "id: %s\nevent: %s\ndata: %s\n\n", ev.ID, ev.Type, b)
			sent = ev.ID
		}
		if sent != page.Next {
			fmt.Fprintf(&buf, "id: %s\n\n", page.Next)
			sent = page.Next
		}
		if buf.Len() == 0 {
			buf.WriteString(": heartbeat\n\n")
		}
		if _, err := fmt.Fprint(w, buf.String()); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		q.After = page.Next
	}
}
