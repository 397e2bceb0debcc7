package refretention

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/versionstore"
)

// Options configure a Service.
type Options struct {
	Store  *versionstore.Store
	Config Config
	// Now is the clock expiry is judged by; nil is time.Now. Tests move
	// it forward instead of sleeping.
	Now    func() time.Time
	Logger *slog.Logger
	// Metrics, if set, receives the sweep's metrics.
	Metrics prometheus.Registerer
}

// Service keeps references' retention settings and expires references.
type Service struct {
	store   *versionstore.Store
	cfg     Config
	now     func() time.Time
	logger  *slog.Logger
	metrics *metrics
	// sweepMu serializes sweeps: the background worker's and the API's.
	sweepMu sync.Mutex
	// judged, if set, runs after a sweep found a reference expired and
	// before it deletes it; tests move the reference there.
	judged func(name string)
}

// New returns the service over opts.Store.
func New(opts Options) (*Service, error) {
	if opts.Store == nil {
		return nil, errors.New("ref retention: no version store")
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, fmt.Errorf("ref retention: %w", err)
	}
	s := &Service{store: opts.Store, cfg: opts.Config, now: opts.Now, logger: opts.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	m, err := newMetrics(opts.Metrics)
	if err != nil {
		return nil, fmt.Errorf("ref retention: %w", err)
	}
	s.metrics = m
	return s, nil
}

// Now is the service's clock: what ages and expiry are judged at.
func (s *Service) Now() time.Time { return s.now() }

// Settings are a reference's own retention, set at its creation or later.
// A nil field inherits the default (the branch's prefix rule); a zero one
// says explicitly "never expire" or "keep all".
type Settings struct {
	MaxAge      *Duration `json:"maxAge,omitempty"`
	KeepCommits *int      `json:"keepCommits,omitempty"`
	KeepHistory *Duration `json:"keepHistory,omitempty"`
}

func (s Settings) validate() error {
	if (s.MaxAge != nil && *s.MaxAge < 0) || (s.KeepCommits != nil && *s.KeepCommits < 0) || (s.KeepHistory != nil && *s.KeepHistory < 0) {
		return fmt.Errorf("%w: retention settings cannot be negative", versionstore.ErrInvalid)
	}
	return nil
}

// IsZero reports whether nothing is set.
func (s Settings) IsZero() bool {
	return s.MaxAge == nil && s.KeepCommits == nil && s.KeepHistory == nil
}

// History is how much of a reference's history stays reachable for time
// travel and garbage collection, counted along first parents from the
// head, which is always kept. A zero field does not constrain: both zero
// keep all history; one set alone decides; with both set, a commit is
// kept when either keeps it (among the newest Commits, or younger than
// Age), as Iceberg's min-snapshots-to-keep and max-snapshot-age-ms
// combine.
type History struct {
	Commits int
	Age     time.Duration
}

// Retention is a reference's effective retention, and where each part
// comes from ("own", "store" for settings given to the store at creation,
// "prefix ingest/", "protected", "main", "tag", "default").
type Retention struct {
	MaxAge       time.Duration
	MaxAgeSource string
	History      History
	// CommitsSource and AgeSource say where History's fields come from.
	CommitsSource, AgeSource string
	// Protected is true for main and the protected prefixes: MaxAge is
	// then zero whatever the settings say.
	Protected bool
}

// Status is one reference with its retention.
type Status struct {
	Ref *versionstore.Ref
	// LastCommit is the head commit's time; zero for an empty branch.
	LastCommit time.Time
	// LastActivity is the later of the creation and the last commit:
	// what MaxAge counts from.
	LastActivity time.Time
	Own          Settings
	Retention    Retention
	// ExpiresAt is LastActivity + MaxAge; zero when it never expires.
	ExpiresAt time.Time
	// Expired is true when ExpiresAt is not after the service's now.
	Expired bool
}

// record is the stored form of a reference's own settings. RefCreated
// ties it to one life of the reference: a record left by a deleted
// reference does not apply to a new one of the same name.
type record struct {
	RefCreated  int64          `json:"refCreatedMicros"`
	MaxAge      *time.Duration `json:"maxAgeNanos,omitempty"`
	KeepCommits *int           `json:"keepCommits,omitempty"`
	KeepHistory *time.Duration `json:"keepHistoryNanos,omitempty"`
}

// recordPrefix keys the records of this package.
const recordPrefix = "refretention/"

func recordKey(ref string) string { return recordPrefix + ref }

// gone is the expiry of a cleared record: long past for any clock, so
// the store treats it as absent at once and ExpireRecords deletes it.
var gone = time.UnixMicro(1)

// own reads the settings of ref as it is now; raw is the stored record
// (nil if absent), for a later compare-and-swap.
func (s *Service) own(ctx context.Context, ref *versionstore.Ref) (Settings, []byte, error) {
	rec, err := s.store.GetRecord(ctx, recordKey(ref.Name))
	if errors.Is(err, versionstore.ErrRecordNotFound) {
		return Settings{}, nil, nil
	}
	if err != nil {
		return Settings{}, nil, fmt.Errorf("retention of %q: %w", ref.Name, err)
	}
	var r record
	if err := json.Unmarshal(rec.Value, &r); err != nil {
		// Unreadable settings fail safe: the reference keeps its
		// defaults, and a new Set overwrites the record.
		s.logger.WarnContext(ctx, "unreadable ref retention record ignored", "ref", ref.Name, "error", err)
		return Settings{}, rec.Value, nil
	}
	if r.RefCreated != ref.Created.UnixMicro() {
		return Settings{}, rec.Value, nil // left by an earlier reference of this name
	}
	var out Settings
	if r.MaxAge != nil {
		d := Duration(*r.MaxAge)
		out.MaxAge = &d
	}
	if r.KeepHistory != nil {
		d := Duration(*r.KeepHistory)
		out.KeepHistory = &d
	}
	out.KeepCommits = r.KeepCommits
	return out, rec.Value, nil
}

// Get returns the own settings of a reference.
func (s *Service) Get(ctx context.Context, name string) (Settings, error) {
	ref, err := s.store.GetRef(name)
	if err != nil {
		return Settings{}, err
	}
	own, _, err := s.own(ctx, ref)
	return own, err
}

// Set replaces the own settings of a reference (every field: a nil one
// inherits again). A maximum age on main or a protected reference is
// refused, since it would never apply.
func (s *Service) Set(ctx context.Context, name string, set Settings) error {
	if err := set.validate(); err != nil {
		return err
	}
	ref, err := s.store.GetRef(name)
	if err != nil {
		return err
	}
	if set.MaxAge != nil && *set.MaxAge > 0 {
		if why := s.protection(ref.Name); why != "" {
			return fmt.Errorf("%w: %q %s, so it cannot have a maximum age", versionstore.ErrInvalid, ref.Name, why)
		}
	}
	if set.IsZero() {
		return s.clear(ctx, ref.Name)
	}
	r := record{RefCreated: ref.Created.UnixMicro(), KeepCommits: set.KeepCommits}
	if set.MaxAge != nil {
		d := time.Duration(*set.MaxAge)
		r.MaxAge = &d
	}
	if set.KeepHistory != nil {
		d := time.Duration(*set.KeepHistory)
		r.KeepHistory = &d
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	// The reference may be deleted and made again between GetRef and
	// here; the record then names the earlier creation time and does not
	// apply to the new reference, which is the safe outcome.
	if err := s.store.PutRecord(ctx, versionstore.Record{Key: recordKey(ref.Name), Value: b}); err != nil {
		return fmt.Errorf("store retention of %q: %w", ref.Name, err)
	}
	return nil
}

// Clear removes the own settings of a reference: it inherits the
// defaults again.
func (s *Service) Clear(ctx context.Context, name string) error {
	ref, err := s.store.GetRef(name)
	if err != nil {
		return err
	}
	return s.clear(ctx, ref.Name)
}

func (s *Service) clear(ctx context.Context, name string) error {
	if err := s.store.PutRecord(ctx, versionstore.Record{Key: recordKey(name), Value: []byte("{}"), Expires: gone}); err != nil {
		return fmt.Errorf("clear retention of %q: %w", name, err)
	}
	return nil
}

// protection says why name never expires ("" if it may).
func (s *Service) protection(name string) string {
	if name == versionstore.DefaultBranch {
		return "is the default branch"
	}
	if p := s.cfg.protected(name); p != "" {
		return fmt.Sprintf("is under the protected prefix %q", p)
	}
	return ""
}

// effective combines a reference's own settings, those it was created
// with in the store (versionstore.Retention), and the defaults of its
// prefix, field by field in that order.
func (s *Service) effective(ref *versionstore.Ref, own Settings) Retention {
	var rule *Rule
	if ref.Type == versionstore.Branch {
		rule = s.cfg.rule(ref.Name)
	}
	source := func(isOwn, inStore bool) string {
		switch {
		case isOwn:
			return "own"
		case inStore:
			return "store"
		case rule != nil:
			return "prefix " + rule.Prefix
		case ref.Type == versionstore.Tag:
			return "tag"
		}
		return "default"
	}
	stored := ref.Retention
	var r Retention
	switch {
	case own.MaxAge != nil:
		r.MaxAge = time.Duration(*own.MaxAge)
	case stored.MaxRefAge != 0:
		r.MaxAge = stored.MaxRefAge
	case rule != nil:
		r.MaxAge = time.Duration(rule.MaxAge)
	}
	r.MaxAgeSource = source(own.MaxAge != nil, stored.MaxRefAge != 0)
	if why := s.protection(ref.Name); why != "" {
		r.MaxAge, r.MaxAgeSource, r.Protected = 0, "protected", true
		if ref.Name == versionstore.DefaultBranch {
			r.MaxAgeSource = "main"
		}
	}

	switch {
	case own.KeepHistory != nil:
		r.History.Age = time.Duration(*own.KeepHistory)
	case stored.MaxSnapshotAge != 0:
		r.History.Age = stored.MaxSnapshotAge
	case rule != nil:
		r.History.Age = time.Duration(rule.KeepHistory)
	}
	switch {
	case own.KeepCommits != nil:
		r.History.Commits = *own.KeepCommits
	case stored.MinSnapshotsToKeep != 0:
		r.History.Commits = int(stored.MinSnapshotsToKeep)
	case rule != nil:
		r.History.Commits = rule.KeepCommits
	}
	r.AgeSource = source(own.KeepHistory != nil, stored.MaxSnapshotAge != 0)
	r.CommitsSource = source(own.KeepCommits != nil, stored.MinSnapshotsToKeep != 0)
	return r
}

// status builds the status of one reference at now.
func (s *Service) status(ctx context.Context, ref *versionstore.Ref, now time.Time) (*Status, []byte, error) {
	own, raw, err := s.own(ctx, ref)
	if err != nil {
		return nil, nil, err
	}
	st := &Status{Ref: ref, Own: own, Retention: s.effective(ref, own), LastActivity: ref.Created}
	if ref.Head != versionstore.NoAncestor {
		c, err := s.store.ReadCommit(ctx, ref.Head)
		if err != nil {
			return nil, nil, fmt.Errorf("head of %q: %w", ref.Name, err)
		}
		st.LastCommit = c.CommitTime
		if c.CommitTime.After(st.LastActivity) {
			st.LastActivity = c.CommitTime
		}
	}
	if st.Retention.MaxAge > 0 {
		st.ExpiresAt = st.LastActivity.Add(st.Retention.MaxAge)
		st.Expired = !st.ExpiresAt.After(now)
	}
	return st, raw, nil
}

// Status returns one reference with its retention.
func (s *Service) Status(ctx context.Context, name string) (*Status, error) {
	ref, err := s.store.GetRef(name)
	if err != nil {
		return nil, err
	}
	st, _, err := s.status(ctx, ref, s.now())
	return st, err
}

// List returns every reference with its retention, by name.
func (s *Service) List(ctx context.Context) ([]*Status, error) {
	now := s.now()
	refs := s.store.ListRefs()
	out := make([]*Status, 0, len(refs))
	for _, ref := range refs {
		st, _, err := s.status(ctx, ref, now)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// HistoryFor is the history rule of a reference for the garbage
// collector: how many commits (along first parents from the head) and
// how much age of its history stay reachable; zero means keep all (see
// History for how the two combine). An unknown reference is an error
// wrapping versionstore.ErrReferenceNotFound.
func (s *Service) HistoryFor(ctx context.Context, name string) (commits int, age time.Duration, err error) {
	ref, err := s.store.GetRef(name)
	if err != nil {
		return 0, 0, err
	}
	own, _, err := s.own(ctx, ref)
	if err != nil {
		return 0, 0, err
	}
	h := s.effective(ref, own).History
	return h.Commits, h.Age, nil
}
