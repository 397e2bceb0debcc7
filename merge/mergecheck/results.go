package mergecheck

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/floe-catalog/floe/versionstore"
)

// ResultRecordPrefix starts the store record key of every result; the
// candidate commit id (hex) completes it.
const ResultRecordPrefix = "mergecheck/result/"

// ErrNoResult reports a candidate that was never validated (or whose
// result expired).
var ErrNoResult = errors.New("no validation result")

// Result is the validation of one candidate: the result store keeps it
// under the candidate's commit id, and it stands only for that candidate.
type Result struct {
	Candidate   Candidate
	Checks      []CheckResult
	Passed      bool
	ValidatedAt time.Time
}

// resultRecord is a Result as the store record holds it (hashes in hex).
type resultRecord struct {
	Candidate struct {
		RequestID       string   `json:"requestId"`
		Target          string   `json:"target"`
		TargetHead      string   `json:"targetHead"`
		Commit          string   `json:"commit"`
		SourceRef       string   `json:"sourceRef"`
		SourceHash      string   `json:"sourceHash"`
		Principal       string   `json:"principal"`
		RequiredChecks  []string `json:"requiredChecks"`
		AllowStructural bool     `json:"allowStructural"`
	} `json:"candidate"`
	Checks      []checkRecord `json:"checks"`
	Passed      bool          `json:"passed"`
	ValidatedAt time.Time     `json:"validatedAt"`
}

type checkRecord struct {
	Name            string  `json:"name"`
	Passed          bool    `json:"passed"`
	Reason          string  `json:"reason"`
	DurationSeconds float64 `json:"durationSeconds"`
}

func encodeResult(r *Result) ([]byte, error) {
	var rec resultRecord
	c := &rec.Candidate
	c.RequestID, c.Target, c.TargetHead, c.Commit = r.Candidate.RequestID, r.Candidate.Target, r.Candidate.TargetHead.String(), r.Candidate.Commit.String()
	c.SourceRef, c.SourceHash, c.Principal = r.Candidate.SourceRef, r.Candidate.SourceHash.String(), r.Candidate.Principal
	c.RequiredChecks, c.AllowStructural = r.Candidate.RequiredChecks, r.Candidate.AllowStructural
	for _, ch := range r.Checks {
		rec.Checks = append(rec.Checks, checkRecord(ch))
	}
	rec.Passed, rec.ValidatedAt = r.Passed, r.ValidatedAt
	return json.Marshal(rec)
}

func decodeResult(b []byte) (*Result, error) {
	var rec resultRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, err
	}
	r := &Result{Passed: rec.Passed, ValidatedAt: rec.ValidatedAt}
	c := rec.Candidate
	var err error
	hash := func(s string) versionstore.Hash {
		h, e := versionstore.ParseHash(s)
		if e != nil && err == nil {
			err = e
		}
		return h
	}
	r.Candidate = Candidate{RequestID: c.RequestID, Target: c.Target, TargetHead: hash(c.TargetHead), Commit: hash(c.Commit),
		SourceRef: c.SourceRef, SourceHash: hash(c.SourceHash), Principal: c.Principal,
		RequiredChecks: c.RequiredChecks, AllowStructural: c.AllowStructural}
	for _, ch := range rec.Checks {
		r.Checks = append(r.Checks, CheckResult(ch))
	}
	return r, err
}

// RecordStore is what the result store needs of the version store.
// Results are cached records (versionstore.Store.PutCachedRecord): a
// validation does not wait for its result's fsync, since a lost result is
// validated again, and the merge queue keeps each verdict in its request's
// durable record.
type RecordStore interface {
	GetRecord(ctx context.Context, key string) (*versionstore.Record, error)
	PutCachedRecord(ctx context.Context, r versionstore.Record) error
}

// results keeps validation results in memory (the most recent ones) and
// in store records (all, until they expire).
type results struct {
	store RecordStore
	ttl   time.Duration
	mem   *lru.Cache[versionstore.Hash, *Result]
}

func newResults(store RecordStore, size int, ttl time.Duration) (*results, error) {
	mem, err := lru.New[versionstore.Hash, *Result](size)
	if err != nil {
		return nil, err
	}
	return &results{store: store, ttl: ttl, mem: mem}, nil
}

// get returns the result kept for commit.
func (r *results) get(ctx context.Context, commit versionstore.Hash) (*Result, error) {
	if res, ok := r.mem.Get(commit); ok {
		return cloneResult(res), nil
	}
	rec, err := r.store.GetRecord(ctx, ResultRecordPrefix+commit.String())
	if errors.Is(err, versionstore.ErrRecordNotFound) {
		return nil, fmt.Errorf("candidate %s: %w", commit, ErrNoResult)
	}
	if err != nil {
		return nil, fmt.Errorf("read the result of candidate %s: %w", commit, err)
	}
	res, err := decodeResult(rec.Value)
	if err != nil {
		return nil, fmt.Errorf("decode the result of candidate %s: %w", commit, err)
	}
	if res.Candidate.Commit != commit {
		// Never hand out a result for another candidate, whatever the
		// record says.
		return nil, fmt.Errorf("the result record of candidate %s names candidate %s: %w", commit, res.Candidate.Commit, ErrNoResult)
	}
	r.mem.Add(commit, res)
	return cloneResult(res), nil
}

// put keeps res under its candidate's commit id, replacing an earlier
// result of the same candidate.
func (r *results) put(ctx context.Context, res *Result) error {
	r.mem.Add(res.Candidate.Commit, cloneResult(res))
	b, err := encodeResult(res)
	if err != nil {
		return err
	}
	rec := versionstore.Record{Key: ResultRecordPrefix + res.Candidate.Commit.String(), Value: b}
	if r.ttl > 0 {
		rec.Expires = res.ValidatedAt.Add(r.ttl)
	}
	if err := r.store.PutCachedRecord(ctx, rec); err != nil {
		return fmt.Errorf("store the result of candidate %s: %w", res.Candidate.Commit, err)
	}
	return nil
}

func cloneResult(r *Result) *Result {
	c := *r
	c.Checks = append([]CheckResult(nil), r.Checks...)
	c.Candidate.RequiredChecks = append([]string(nil), r.Candidate.RequiredChecks...)
	return &c
}
