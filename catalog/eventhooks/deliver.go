package eventhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/internal/backoff"
	"github.com/floe-catalog/floe/versionstore"
)

// Options configure a Service.
type Options struct {
	Store *versionstore.Store
	Feed  *changefeed.Feed
	// Subscriptions are the webhooks (LoadConfig reads them from a file).
	Subscriptions []Subscription
	// Source is the CloudEvents source; "" is DefaultSource.
	Source string
	// Decider, if set, decides which events each subscription's
	// principal may read; nil lets every subscription read everything
	// (authorization off).
	Decider Decider
	// HTTPClient posts the events; nil is a client of its own. Each
	// attempt is bounded by its subscription's Timeout.
	HTTPClient *http.Client
	Logger     *slog.Logger
	Metrics    prometheus.Registerer
	// Poll is how long one read of the feed waits for new events, and
	// how often a dead-lettered subscription looks for an operator's
	// resume; 0 is 2s.
	Poll time.Duration
	// SaveEvery bounds how often a flowing subscription writes its
	// cursor: at most once per SaveEvery, besides the writes of failed
	// attempts and of the end, and within SaveEvery of a delivery. It
	// bounds what a crash makes the receiver see twice, and the
	// durable writes delivery adds to the store's. 0 is 1s; negative
	// writes after every page.
	SaveEvery time.Duration
}

// pageSize is how many events one read of the feed hands a subscription.
const pageSize = 100

// minWait is the shortest a read of the feed may wait for events.
const minWait = 100 * time.Millisecond

// Service delivers the change feed to the configured subscriptions.
type Service struct {
	store   *versionstore.Store
	feed    *changefeed.Feed
	subs    []Subscription
	source  string
	decider Decider
	client  *http.Client
	logger  *slog.Logger
	metrics *metrics
	poll    time.Duration
	save    time.Duration
}

// New checks the subscriptions and returns the service; Run delivers.
func New(opts Options) (*Service, error) {
	if opts.Store == nil || opts.Feed == nil {
		return nil, errors.New("event webhooks: a store and a feed are needed")
	}
	s := &Service{store: opts.Store, feed: opts.Feed, source: opts.Source, decider: opts.Decider,
		client: opts.HTTPClient, logger: opts.Logger, poll: opts.Poll, save: opts.SaveEvery}
	if s.source == "" {
		s.source = DefaultSource
	}
	if s.client == nil {
		// Every subscription keeps one connection open between its
		// deliveries, however many share a receiver's host (the
		// default transport keeps two per host, so ten subscriptions
		// to one host would open a connection per event).
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = max(2, len(opts.Subscriptions))
		s.client = &http.Client{Transport: t}
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.poll <= 0 {
		s.poll = 2 * time.Second
	}
	if s.save == 0 {
		s.save = time.Second
	}
	seen := map[string]bool{}
	for _, sub := range opts.Subscriptions {
		if err := sub.validate(); err != nil {
			return nil, fmt.Errorf("event webhooks: %w", err)
		}
		if seen[sub.Name] {
			return nil, fmt.Errorf("event webhooks: subscription %s is configured twice", sub.Name)
		}
		seen[sub.Name] = true
		sub.withDefaults()
		s.subs = append(s.subs, sub)
	}
	var err error
	if s.metrics, err = newMetrics(opts.Metrics); err != nil {
		return nil, err
	}
	return s, nil
}

// Run delivers every subscription until ctx ends; over a shared store the
// composition root runs it only while this replica holds the delivery
// lease, and ctx ends when the lease is lost. Delivery never touches the
// commit path: it reads the reference log after the fact, so a slow or
// failing receiver delays only its own subscription.
func (s *Service) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for i := range s.subs {
		wg.Go(func() { s.follow(ctx, &s.subs[i]) })
	}
	wg.Wait()
}

// follower is one subscription's delivery: its durable state as last
// read or written, and its state in memory, ahead by what was delivered
// since.
type follower struct {
	s       *Service
	sub     *Subscription
	durable *stored
	cur     State
	savedAt time.Time
}

// follow delivers sub until ctx ends.
func (s *Service) follow(ctx context.Context, sub *Subscription) {
	f := &follower{s: s, sub: sub}
	for ctx.Err() == nil {
		if f.durable == nil {
			if err := f.load(ctx); err != nil {
				f.failed(ctx, "reading its state", err)
				continue
			}
		}
		s.metrics.state(sub.Name, &f.cur)
		if f.cur.Status == StatusDeadLetter {
			// Wait for an operator, who may resume it on any replica.
			sleep(ctx, s.poll)
			f.durable = nil
			continue
		}
		if f.cur.retrying() {
			sleep(ctx, time.Until(f.cur.NextAttempt)) // a retry's backoff outlives a restart
		}
		err := f.round(ctx)
		switch {
		case ctx.Err() != nil:
		case errors.Is(err, versionstore.ErrRecordConflict):
			// Another writer (an operator's resume, or a replica that
			// took over) changed the state: go on from what it holds.
			f.durable = nil
		case errors.Is(err, changefeed.ErrDraining):
			<-ctx.Done() // the process is shutting down
		case err != nil:
			// What was delivered stays delivered: the state in memory is
			// kept, and written with the next flush.
			f.failed(ctx, "delivering", err)
		}
	}
	// Keep what was delivered, so a clean restart repeats nothing.
	if f.durable != nil {
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := f.flush(wctx); err != nil {
			f.s.logger.WarnContext(wctx, "event webhook: the last deliveries' cursor is not written; they will be delivered again",
				"subscription", f.sub.Name, "cursor", f.cur.Cursor.String(), "err", err)
		}
	}
}

// failed logs err and waits a poll interval before trying again.
func (f *follower) failed(ctx context.Context, doing string, err error) {
	if ctx.Err() == nil {
		f.s.logger.WarnContext(ctx, "event webhook: "+doing+" failed; trying again", "subscription", f.sub.Name, "err", err)
	}
	sleep(ctx, f.s.poll)
}

// load reads the durable state, creating it for a new subscription at
// the feed's head (or start).
func (f *follower) load(ctx context.Context) error {
	st, err := loadState(ctx, f.s.store, f.sub.Name)
	if err != nil {
		return err
	}
	if st == nil {
		first := State{Status: StatusActive, Cursor: changefeed.Start}
		if !f.sub.FromStart {
			if first.Cursor, err = f.s.feed.Head(ctx); err != nil {
				return err
			}
		}
		if st, err = saveState(ctx, f.s.store, f.sub.Name, nil, first); err != nil {
			return err
		}
		f.s.logger.InfoContext(ctx, "event webhook: subscription starts", "subscription", f.sub.Name, "after", first.Cursor.String())
	}
	f.durable, f.cur, f.savedAt = st, st.State, time.Now()
	return nil
}

// unsaved reports whether the state in memory differs from the durable
// one.
func (f *follower) unsaved() bool {
	raw, err := json.Marshal(f.cur)
	return err != nil || !bytes.Equal(raw, f.durable.raw)
}

// flush writes the state in memory if it differs from the durable one.
func (f *follower) flush(ctx context.Context) error {
	if !f.unsaved() {
		return nil
	}
	st, err := saveState(ctx, f.s.store, f.sub.Name, f.durable, f.cur)
	if err != nil {
		return err
	}
	f.durable, f.savedAt = st, time.Now()
	return nil
}

// round reads one page of the feed after the cursor and delivers it, in
// order, each event until it is delivered or the subscription is
// dead-lettered on it.
func (f *follower) round(ctx context.Context) error {
	wait := f.s.poll
	if f.s.save > 0 && f.unsaved() {
		// Progress is made durable within SaveEvery of being made,
		// even when nothing follows it.
		due := f.s.save - time.Since(f.savedAt)
		if due <= 0 {
			if err := f.flush(ctx); err != nil {
				return err
			}
		} else {
			wait = min(wait, due)
		}
	}
	// The wait's deadline also bounds the reads of the page that ends
	// it: keep it long enough for them.
	wait = max(wait, minWait)
	wctx, cancel := context.WithTimeout(ctx, wait)
	page, err := f.s.feed.Wait(wctx, changefeed.Query{After: f.cur.Cursor, Types: f.sub.Filter.Types, Limit: pageSize, Allow: allow(f.sub, f.s.decider)})
	cancel()
	if err != nil && errors.Is(wctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil && !errors.Is(err, changefeed.ErrDraining) {
		return nil // the deadline came while a page was read: read it again
	}
	if err != nil {
		return err
	}
	for i := range page.Events {
		ev := &page.Events[i]
		delivered, err := f.deliver(ctx, ev)
		if err != nil || !delivered {
			return err
		}
	}
	if f.cur.Cursor.Before(page.Next) {
		f.cur.Cursor = page.Next // past what the subscription does not select
	}
	if f.cur.retrying() && !f.cur.Cursor.Before(f.cur.Pending) {
		// The pending event is no longer selected (the policy changed).
		f.cur.Pending, f.cur.PendingType, f.cur.PendingRef, f.cur.Attempts = changefeed.Cursor{}, "", "", 0
		f.cur.LastError, f.cur.LastAttempt, f.cur.NextAttempt = "", time.Time{}, time.Time{}
	}
	if f.s.save > 0 && time.Since(f.savedAt) < f.s.save {
		return nil
	}
	return f.flush(ctx)
}

// deliver posts ev until the receiver takes it (true), the subscription
// is dead-lettered on it (false), or ctx ends. Each failed attempt is
// written down with the cursor before ev, so the backoff, the reason and
// the progress so far survive a restart and show in the API.
func (f *follower) deliver(ctx context.Context, ev *changefeed.Event) (bool, error) {
	body, err := json.Marshal(envelope(f.s.source, ev))
	if err != nil {
		return false, fmt.Errorf("encode event %s: %w", ev.ID, err)
	}
	sig := Sign(f.sub.Secret, body)
	if f.cur.Pending != ev.ID {
		f.cur.Attempts = 0 // a new event (or a pending one no longer selected)
	}
	for {
		start := time.Now()
		err := f.attempt(ctx, body, sig, f.cur.Attempts+1)
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if err == nil {
			f.s.metrics.attempts.WithLabelValues(f.sub.Name, "delivered").Inc()
			f.s.metrics.latency.WithLabelValues(f.sub.Name).Observe(time.Since(start).Seconds())
			f.s.metrics.eventTime.WithLabelValues(f.sub.Name).Set(float64(ev.Time.UnixNano()) / 1e9)
			wasRetrying := f.cur.retrying()
			f.cur.Cursor, f.cur.Delivered, f.cur.LastDelivered = ev.ID, f.cur.Delivered+1, time.Now().UTC()
			f.cur.Pending, f.cur.PendingType, f.cur.PendingRef = changefeed.Cursor{}, "", ""
			f.cur.Attempts, f.cur.LastError, f.cur.LastAttempt, f.cur.NextAttempt = 0, "", time.Time{}, time.Time{}
			if wasRetrying {
				f.s.metrics.state(f.sub.Name, &f.cur)
			}
			return true, nil
		}
		f.s.metrics.attempts.WithLabelValues(f.sub.Name, "failed").Inc()
		id := ev.ID
		now := time.Now().UTC()
		f.cur.Pending, f.cur.PendingType, f.cur.PendingRef = id, ev.Type, ev.Ref
		f.cur.Attempts++
		f.cur.LastError, f.cur.LastAttempt = err.Error(), now
		if f.cur.Attempts >= f.sub.MaxAttempts {
			f.cur.Status, f.cur.DeadLetteredAt, f.cur.NextAttempt = StatusDeadLetter, now, time.Time{}
			f.s.logger.ErrorContext(ctx, "event webhook: dead-lettered; delivery waits for an operator to resume it",
				"subscription", f.sub.Name, "event", id.String(), "type", ev.Type, "ref", ev.Ref, "attempts", f.cur.Attempts, "err", err)
		} else {
			f.cur.NextAttempt = now.Add(f.backoff(f.cur.Attempts))
			f.s.logger.WarnContext(ctx, "event webhook: attempt failed", "subscription", f.sub.Name, "event", id.String(),
				"attempt", f.cur.Attempts, "next_attempt", f.cur.NextAttempt, "err", err)
		}
		f.s.metrics.state(f.sub.Name, &f.cur)
		if err := f.flush(ctx); err != nil {
			return false, err
		}
		if f.cur.Status == StatusDeadLetter {
			return false, nil
		}
		sleep(ctx, time.Until(f.cur.NextAttempt))
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
	}
}

// backoff is the delay after the n-th failed attempt: Backoff doubled
// n-1 times, at most MaxBackoff, drawn from its upper half so that the
// retries of many subscriptions spread out.
func (f *follower) backoff(n int) time.Duration {
	return backoff.Policy{Base: f.sub.Backoff, Max: f.sub.MaxBackoff}.Delay(n)
}

// maxAnswerBytes bounds what is read of a receiver's answer.
const maxAnswerBytes = 4 << 10

// attempt posts the body once; nil when the receiver answered 2xx.
func (f *follower) attempt(ctx context.Context, body []byte, sig string, n int) error {
	actx, cancel := context.WithTimeout(ctx, f.sub.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, f.sub.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("bad URL: %w", err)
	}
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("User-Agent", "floe-eventhooks")
	req.Header.Set(SignatureHeader, sig)
	req.Header.Set(SubscriptionHeader, f.sub.Name)
	req.Header.Set(AttemptHeader, strconv.Itoa(n))
	resp, err := f.s.client.Do(req)
	if err != nil {
		if errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("attempt %d: no answer within %s", n, f.sub.Timeout)
		}
		return fmt.Errorf("attempt %d: %w", n, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("attempt %d: status %d %s", n, resp.StatusCode, snippet(raw))
	}
	return nil
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

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
