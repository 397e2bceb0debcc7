package maintenance

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/internal/apidoc"
	"github.com/floe-catalog/floe/versionstore"
)

// Defaults and bounds of a lease's time to live.
const (
	DefaultTTL = 30 * time.Minute
	MinTTL     = time.Second
	// DefaultMaxTTL bounds a lease when Options.MaxTTL is zero: a job
	// that needs longer renews.
	DefaultMaxTTL = 24 * time.Hour
)

// recordPrefix starts the store record key of every lock.
const recordPrefix = "maintenance/lock/"

// recordGrace keeps a lease's record in the store this long after the
// lease ends, so the store's own expiry (which runs on the store's clock)
// never removes a record this package still considers live. Until then an
// ended lease is recognised here, by its expiry, and taken over by
// compare-and-swap like an absent one.
const recordGrace = 24 * time.Hour

// released is the store expiry a released lock's record is written with:
// long past, so the store reads it as absent at once and its expiry sweep
// deletes it. (The Unix epoch itself cannot be stored.)
var released = time.UnixMicro(1)

// Errors callers branch on.
var (
	// ErrNotHeld reports a renewal, release or status of a lock no live
	// lease holds (never acquired, released, or expired).
	ErrNotHeld = errors.New("maintenance lock not held")
	// ErrInvalid reports a bad target, job or ttl.
	ErrInvalid = errors.New("invalid maintenance lock request")
	// ErrNotATable reports a target that is no Iceberg table on the
	// branch.
	ErrNotATable = errors.New("no such table")
)

// Target is what a lock covers: one table on one catalog branch. Locks
// are per branch because commits are: a compaction of the table on
// branch dev writes dev's metadata and cannot conflict with one on main,
// and a job holding main's lock must not stop maintenance on a branch
// that merely shares files with it.
type Target struct {
	Branch string
	Table  versionstore.ContentKey
}

func (t Target) String() string { return t.Table.String() + " on branch " + t.Branch }

func (t Target) validate() error {
	if t.Branch == "" {
		return fmt.Errorf("%w: no branch", ErrInvalid)
	}
	if len(t.Table) < 2 {
		return fmt.Errorf("%w: table %q: want namespace and name", ErrInvalid, t.Table.String())
	}
	if err := t.Table.Validate(); err != nil {
		return fmt.Errorf("%w: table %q: %v", ErrInvalid, t.Table.String(), err)
	}
	return nil
}

// ID is the lock's public identifier: the same for every lease of one
// target, derived from it (so no index is kept), and opaque so that any
// branch or table name fits in a URL path segment.
func (t Target) ID() string {
	h := sha256.Sum256([]byte(t.Branch + "\x00" + strings.Join(t.Table, "\x1f")))
	return hex.EncodeToString(h[:16])
}

// The lease's documents live in internal/apidoc, which the CLI's client
// shares without importing this package.
type (
	Holder = apidoc.LockHolder
	Lock   = apidoc.Lock
	Lease  = apidoc.Lease
)

// HeldError reports a lock held by someone else: an acquisition that must
// skip its cycle, a renewal or release with another lease's token, or a
// maintenance commit that is not the holder's.
type HeldError struct {
	Lock Lock
	// What was refused, for the message ("" for an acquisition).
	What string
}

func (e *HeldError) Error() string {
	l := e.Lock
	what := e.What
	if what == "" {
		what = "cannot acquire the maintenance lock"
	}
	return fmt.Sprintf("%s: table %s on branch %s is locked for maintenance by %s (job %q) until %s",
		what, versionstore.ContentKey(l.Table).String(), l.Branch, l.Holder.Principal, l.Holder.Job,
		l.Expires.UTC().Format(time.RFC3339))
}

// stored is a lease as its record holds it. The token is kept as its
// SHA-256 only, so neither status answers nor a copy of the store reveal
// it.
type stored struct {
	Version   int       `json:"v"`
	Branch    string    `json:"branch"`
	Table     []string  `json:"table"`
	Principal string    `json:"principal"`
	Job       string    `json:"job"`
	TokenHash string    `json:"token_sha256"`
	Acquired  time.Time `json:"acquired"`
	Renewed   time.Time `json:"renewed"`
	Expires   time.Time `json:"expires"`
}

func (s *stored) lock() Lock {
	t := Target{Branch: s.Branch, Table: s.Table}
	return Lock{ID: t.ID(), Branch: s.Branch, Table: s.Table, Holder: Holder{Principal: s.Principal, Job: s.Job},
		Acquired: s.Acquired, Renewed: s.Renewed, Expires: s.Expires}
}

// holds reports whether token is this lease's, in constant time.
func (s *stored) holds(token string) bool {
	if token == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(hashToken(token)), []byte(s.TokenHash)) == 1
}

func hashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// Options configure a Service.
type Options struct {
	// Now is the clock leases are dated and expired by; nil is time.Now.
	// Tests move it to expire a lease without sleeping.
	Now func() time.Time
	// MaxTTL bounds a lease's time to live; 0 means DefaultMaxTTL.
	MaxTTL time.Duration
	// Metrics receives the collectors; nil means a private registry.
	Metrics prometheus.Registerer
	Logger  *slog.Logger
}

// Service keeps the maintenance locks of one catalog.
type Service struct {
	store   *versionstore.Store
	now     func() time.Time
	maxTTL  time.Duration
	metrics *metrics
	logger  *slog.Logger
}

// New returns the locks kept in store.
func New(store *versionstore.Store, opts Options) (*Service, error) {
	if store == nil {
		return nil, errors.New("maintenance: no version store")
	}
	s := &Service{store: store, now: opts.Now, maxTTL: opts.MaxTTL, logger: opts.Logger}
	if s.now == nil {
		s.now = time.Now
	}
	if s.maxTTL <= 0 {
		s.maxTTL = DefaultMaxTTL
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	reg := opts.Metrics
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m, err := newMetrics(reg)
	if err != nil {
		return nil, fmt.Errorf("maintenance: registering metrics: %w", err)
	}
	s.metrics = m
	return s, nil
}

// clock is now, in UTC at the store's precision, so that what is stored
// reads back equal.
func (s *Service) clock() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

func (s *Service) ttl(ttl time.Duration) (time.Duration, error) {
	switch {
	case ttl == 0:
		return DefaultTTL, nil
	case ttl < MinTTL || ttl > s.maxTTL:
		return 0, fmt.Errorf("%w: ttl %s: want %s to %s", ErrInvalid, ttl, MinTTL, s.maxTTL)
	}
	return ttl, nil
}

func recordKey(t Target) string { return recordPrefix + t.ID() }

// current reads the target's lease: nil when none is live at now. raw is
// the record's value, the compare-and-swap value of the next write (nil
// when the record is absent).
func (s *Service) current(ctx context.Context, key string, now time.Time) (lease *stored, raw []byte, err error) {
	rec, err := s.store.GetRecord(ctx, key)
	if errors.Is(err, versionstore.ErrRecordNotFound) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	var st stored
	if err := json.Unmarshal(rec.Value, &st); err != nil || st.Version != 1 {
		// Unreadable: treat as free, and let the next write replace it.
		s.logger.WarnContext(ctx, "maintenance lock record does not decode; treating it as free", "key", key)
		return nil, rec.Value, nil
	}
	if !now.Before(st.Expires) {
		return nil, rec.Value, nil
	}
	return &st, rec.Value, nil
}

// write stores st by compare-and-swap on prev (nil: must be absent).
func (s *Service) write(ctx context.Context, key string, prev []byte, st *stored, expires time.Time) error {
	val, err := json.Marshal(st)
	if err != nil {
		return err
	}
	cond := &versionstore.RecordCondition{Exists: prev != nil, Value: prev}
	return s.store.PutRecord(ctx, versionstore.Record{Key: key, Value: val, Expires: expires, If: cond})
}

// checkTable makes sure the target is an Iceberg table on a branch.
func (s *Service) checkTable(ctx context.Context, t Target) error {
	ref, err := s.store.GetRef(t.Branch)
	if err != nil {
		return err
	}
	if ref.Type != versionstore.Branch {
		return fmt.Errorf("%q is a tag: %w", t.Branch, versionstore.ErrNotABranch)
	}
	c, err := s.store.GetContent(ctx, ref.Head, t.Table)
	if errors.Is(err, versionstore.ErrContentNotFound) || (err == nil && c.Type != versionstore.IcebergTable) {
		return fmt.Errorf("%w: %s on branch %s", ErrNotATable, t.Table.String(), t.Branch)
	}
	return err
}

// maxCASAttempts bounds the compare-and-swap loop of one call: each lost
// race means another writer's lease or release landed, which the next
// read sees.
const maxCASAttempts = 4

// Acquire takes the target's lock for ttl (0: DefaultTTL) if no live
// lease holds it, and returns the lease with its token; if one does, it
// returns a *HeldError naming the holder, at once: a job that cannot have
// the lock skips this cycle rather than queue.
func (s *Service) Acquire(ctx context.Context, t Target, h Holder, ttl time.Duration) (*Lease, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	if h.Job == "" || len(h.Job) > 200 {
		return nil, fmt.Errorf("%w: a job name of 1 to 200 bytes is required", ErrInvalid)
	}
	ttl, err := s.ttl(ttl)
	if err != nil {
		return nil, err
	}
	if err := s.checkTable(ctx, t); err != nil {
		return nil, err
	}
	key := recordKey(t)
	for range maxCASAttempts {
		now := s.clock()
		cur, raw, err := s.current(ctx, key, now)
		if err != nil {
			return nil, err
		}
		if cur != nil {
			s.metrics.skips.Inc()
			return nil, &HeldError{Lock: cur.lock()}
		}
		token, err := newToken()
		if err != nil {
			return nil, err
		}
		st := &stored{Version: 1, Branch: t.Branch, Table: t.Table, Principal: h.Principal, Job: h.Job,
			TokenHash: hashToken(token), Acquired: now, Renewed: now, Expires: now.Add(ttl)}
		err = s.write(ctx, key, raw, st, st.Expires.Add(recordGrace))
		if errors.Is(err, versionstore.ErrRecordConflict) {
			continue // someone else wrote first: read again, they probably hold it now
		}
		if err != nil {
			return nil, fmt.Errorf("acquire maintenance lock of %s: %w", t, err)
		}
		s.metrics.acquisitions.Inc()
		s.logger.InfoContext(ctx, "maintenance lock acquired", "table", t.Table.String(), "branch", t.Branch,
			"principal", h.Principal, "job", h.Job, "expires", st.Expires)
		return &Lease{Lock: st.lock(), Token: token}, nil
	}
	return nil, fmt.Errorf("acquire maintenance lock of %s: the lock changed %d times while acquiring; try again", t, maxCASAttempts)
}

// Renew extends the lease token holds to ttl from now (0: DefaultTTL). A
// lease that has expired cannot be renewed (another job may have held the
// lock since): ErrNotHeld, acquire it again.
func (s *Service) Renew(ctx context.Context, t Target, token string, ttl time.Duration) (*Lock, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	ttl, err := s.ttl(ttl)
	if err != nil {
		return nil, err
	}
	key := recordKey(t)
	for range maxCASAttempts {
		now := s.clock()
		cur, raw, err := s.holderLease(ctx, t, key, token, now, "cannot renew")
		if err != nil {
			return nil, err
		}
		next := *cur
		next.Renewed, next.Expires = now, now.Add(ttl)
		err = s.write(ctx, key, raw, &next, next.Expires.Add(recordGrace))
		if errors.Is(err, versionstore.ErrRecordConflict) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("renew maintenance lock of %s: %w", t, err)
		}
		s.metrics.renewals.Inc()
		l := next.lock()
		return &l, nil
	}
	return nil, fmt.Errorf("renew maintenance lock of %s: the lock changed %d times while renewing; try again", t, maxCASAttempts)
}

// Release ends the lease token holds; the lock is free at once.
func (s *Service) Release(ctx context.Context, t Target, token string) error {
	if err := t.validate(); err != nil {
		return err
	}
	key := recordKey(t)
	for range maxCASAttempts {
		now := s.clock()
		cur, raw, err := s.holderLease(ctx, t, key, token, now, "cannot release")
		if err != nil {
			return err
		}
		err = s.write(ctx, key, raw, cur, released)
		if errors.Is(err, versionstore.ErrRecordConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("release maintenance lock of %s: %w", t, err)
		}
		s.metrics.releases.Inc()
		s.logger.InfoContext(ctx, "maintenance lock released", "table", t.Table.String(), "branch", t.Branch,
			"principal", cur.Principal, "job", cur.Job)
		return nil
	}
	return fmt.Errorf("release maintenance lock of %s: the lock changed %d times while releasing; try again", t, maxCASAttempts)
}

// holderLease returns the live lease of t if token holds it: ErrNotHeld
// when none is live, a *HeldError when another lease is.
func (s *Service) holderLease(ctx context.Context, t Target, key, token string, now time.Time, what string) (*stored, []byte, error) {
	cur, raw, err := s.current(ctx, key, now)
	if err != nil {
		return nil, nil, err
	}
	if cur == nil {
		return nil, nil, fmt.Errorf("%w: no live lease on %s (released or expired): acquire it again", ErrNotHeld, t)
	}
	if !cur.holds(token) {
		return nil, nil, &HeldError{Lock: cur.lock(), What: what + " with another lease's token"}
	}
	return cur, raw, nil
}

// Status returns the target's live lease, or ErrNotHeld.
func (s *Service) Status(ctx context.Context, t Target) (*Lock, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	return s.statusByID(ctx, t.ID())
}

// StatusByID returns the live lease of the lock with that ID, or
// ErrNotHeld.
func (s *Service) StatusByID(ctx context.Context, id string) (*Lock, error) {
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		return nil, fmt.Errorf("%w: lock id %q: want 32 hexadecimal digits", ErrInvalid, id)
	}
	return s.statusByID(ctx, id)
}

func (s *Service) statusByID(ctx context.Context, id string) (*Lock, error) {
	cur, _, err := s.current(ctx, recordPrefix+id, s.clock())
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, fmt.Errorf("%w: lock %s", ErrNotHeld, id)
	}
	l := cur.lock()
	return &l, nil
}

// List returns the live leases, those of branch only unless it is "",
// ordered by id.
func (s *Service) List(ctx context.Context, branch string) ([]Lock, error) {
	now := s.clock()
	var out []Lock
	after := ""
	for {
		recs, next, err := s.store.ScanRecords(ctx, recordPrefix, after, 256)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			var st stored
			if json.Unmarshal(r.Value, &st) != nil || !now.Before(st.Expires) {
				continue
			}
			if branch == "" || st.Branch == branch {
				out = append(out, st.lock())
			}
		}
		if next == "" {
			return out, nil
		}
		after = next
	}
}

// Maintenance commit kinds, as CheckCommit and the metrics name them.
const (
	KindRewrite = "rewrite" // a replace snapshot: compaction, rewrite_manifests, rewrite_position_delete_files
	KindExpire  = "expire"  // remove-snapshots: expire_snapshots
)

// CheckCommit decides a maintenance commit of kind on the target: nil
// when no lease is live or token holds it, else a *HeldError naming the
// holder. Other commits never ask: the lock does not stop ingestion.
func (s *Service) CheckCommit(ctx context.Context, t Target, token, kind string) error {
	cur, _, err := s.current(ctx, recordKey(t), s.clock())
	if err != nil {
		return fmt.Errorf("read maintenance lock of %s: %w", t, err)
	}
	if cur == nil || cur.holds(token) {
		return nil
	}
	s.metrics.commitsRefused.WithLabelValues(kind).Inc()
	what := "Commit failed: this " + kindDescription(kind) + " is not the lock holder's"
	if token != "" {
		what += " (its " + TokenHeader + " token is another lease's)"
	}
	return &HeldError{Lock: cur.lock(), What: what}
}

// TokenHeader is the HTTP header a lease's token travels in (apidoc).
const TokenHeader = apidoc.LockTokenHeader

func kindDescription(kind string) string {
	switch kind {
	case KindRewrite:
		return "rewrite (a replace snapshot: compaction or manifest rewrite)"
	case KindExpire:
		return "snapshot expiry"
	}
	return "maintenance commit"
}

func newToken() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("maintenance lock token: %w", err)
	}
	return "fml_" + base64.RawURLEncoding.EncodeToString(b), nil
}
