package refretention

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/versionstore"
)

// Principal is who the reference log names for a deletion by the expiry
// sweep. The log has no message field (its format is pinned), so the
// reason follows the principal after ": " (see Expire and ExpiryReason).
const Principal = "floe-retention"

// expiryPrefix starts the principal of every deletion the sweep makes.
// The sweep is its only writer in floe; an identity provider that named
// a principal so would have that principal's deletions read as expiries.
const expiryPrefix = Principal + ": "

// ExpiryReason tells, from the principal a reference-log DELETE entry
// recorded, whether the deletion was a retention expiry, and why. It is
// how the change feed reports branch.expired and tag.expired from what
// the store keeps durably, without a second record.
func ExpiryReason(principal string) (reason string, ok bool) {
	reason, ok = strings.CutPrefix(principal, expiryPrefix)
	return reason, ok && reason != ""
}

// Expired is one reference a sweep deleted, or would delete in a dry
// run.
type Expired struct {
	Name         string
	Type         versionstore.RefType
	Head         versionstore.Hash
	LastActivity time.Time
	MaxAge       time.Duration
	MaxAgeSource string
	ExpiresAt    time.Time
}

// Skipped is an expired reference a sweep left alone, and why: it moved
// since it was judged (a new commit makes it live again), or its deletion
// failed.
type Skipped struct {
	Name   string
	Reason string
}

// SweepResult is what one sweep did.
type SweepResult struct {
	DryRun  bool
	Started time.Time
	// Checked counts the references looked at.
	Checked int
	Expired []Expired
	Skipped []Skipped
}

// Expire deletes every expired reference (see Status.Expired) through the
// store, each conditional on the head it was judged at, so a reference
// that got a commit in between is left alone (it is live again: its
// last activity is that commit). Main and protected references are never
// candidates. The reference log records each deletion with the principal
// "floe-retention: expired by retention (max age ..., inactive since
// ...)". A dry run deletes nothing and reports the same list. The
// settings record of a deleted reference is cleared too.
func (s *Service) Expire(ctx context.Context, dryRun bool) (*SweepResult, error) {
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	start := time.Now()
	now := s.now()
	res := &SweepResult{DryRun: dryRun, Started: now, Expired: []Expired{}, Skipped: []Skipped{}}
	err := s.sweep(ctx, now, res)
	if !dryRun {
		s.metrics.duration.Observe(time.Since(start).Seconds())
		s.metrics.expiries.Add(float64(len(res.Expired)))
		if err != nil {
			s.metrics.errors.Inc()
		}
	}
	return res, err
}

func (s *Service) sweep(ctx context.Context, now time.Time, res *SweepResult) error {
	for _, ref := range s.store.ListRefs() {
		if err := ctx.Err(); err != nil {
			return err
		}
		res.Checked++
		st, raw, err := s.status(ctx, ref, now)
		if err != nil {
			return fmt.Errorf("expiry sweep: %w", err)
		}
		if !st.Expired || st.Retention.Protected || ref.Name == versionstore.DefaultBranch {
			continue
		}
		e := Expired{Name: ref.Name, Type: ref.Type, Head: ref.Head, LastActivity: st.LastActivity,
			MaxAge: st.Retention.MaxAge, MaxAgeSource: st.Retention.MaxAgeSource, ExpiresAt: st.ExpiresAt}
		if res.DryRun {
			res.Expired = append(res.Expired, e)
			continue
		}
		if s.judged != nil {
			s.judged(ref.Name)
		}
		reason := fmt.Sprintf("expired by retention (max age %s from %s, inactive since %s)",
			FormatDuration(e.MaxAge), e.MaxAgeSource, e.LastActivity.UTC().Format(time.RFC3339))
		err = s.store.DeleteRef(ctx, versionstore.DeleteRefRequest{Name: ref.Name, Type: ref.Type, Expected: ref.Head, Principal: expiryPrefix + reason})
		switch {
		case errors.Is(err, versionstore.ErrReferenceConflict):
			res.Skipped = append(res.Skipped, Skipped{Name: ref.Name, Reason: "moved since it was judged expired; it is live again"})
			continue
		case errors.Is(err, versionstore.ErrReferenceNotFound):
			res.Skipped = append(res.Skipped, Skipped{Name: ref.Name, Reason: "deleted by someone else meanwhile"})
			continue
		case err != nil:
			return fmt.Errorf("expiry sweep: delete %s %q: %w", ref.Type, ref.Name, err)
		}
		res.Expired = append(res.Expired, e)
		s.logger.InfoContext(ctx, "reference expired", "ref", ref.Name, "type", ref.Type.String(), "head", ref.Head.String(),
			"max_age", FormatDuration(e.MaxAge), "source", e.MaxAgeSource, "inactive_since", e.LastActivity)
		if raw != nil {
			// Only if nobody rewrote it meanwhile; a leftover record is
			// harmless anyway (it names the deleted reference's creation).
			err := s.store.PutRecord(ctx, versionstore.Record{Key: recordKey(ref.Name), Value: []byte("{}"), Expires: gone,
				If: &versionstore.RecordCondition{Exists: true, Value: raw}})
			if err != nil && !errors.Is(err, versionstore.ErrRecordConflict) {
				s.logger.WarnContext(ctx, "could not clear the retention of an expired reference", "ref", ref.Name, "error", err)
			}
		}
	}
	return nil
}

// Run sweeps every interval until ctx ends; a failed sweep is logged and
// the next one tries again.
func (s *Service) Run(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		res, err := s.Expire(ctx, false)
		if err != nil {
			if ctx.Err() == nil {
				s.logger.ErrorContext(ctx, "reference expiry sweep failed", "error", err)
			}
			continue
		}
		if len(res.Expired) > 0 || len(res.Skipped) > 0 {
			s.logger.InfoContext(ctx, "reference expiry sweep", "checked", res.Checked, "expired", len(res.Expired), "skipped", len(res.Skipped))
		}
	}
}

type metrics struct {
	expiries prometheus.Counter
	errors   prometheus.Counter
	duration prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		expiries: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_ref_expiries_total",
			Help: "References deleted by the retention expiry sweep."}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{Name: "floe_ref_expiry_sweep_errors_total",
			Help: "Reference expiry sweeps that failed."}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "floe_ref_expiry_sweep_duration_seconds",
			Help: "Duration of reference expiry sweeps (dry runs excluded).", Buckets: prometheus.ExponentialBuckets(0.001, 4, 10)}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.expiries, m.errors, m.duration} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("register metrics: %w", err)
		}
	}
	return m, nil
}
