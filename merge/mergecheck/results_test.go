package mergecheck

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/floe-catalog/floe/versionstore"
)

// nopStore holds records in memory; it knows no commits.
type nopStore struct{ records *sync.Map }

func (s nopStore) GetRecord(_ context.Context, key string) (*versionstore.Record, error) {
	if s.records != nil {
		if v, ok := s.records.Load(key); ok {
			r := v.(versionstore.Record)
			return &r, nil
		}
	}
	return nil, versionstore.ErrRecordNotFound
}

func (s nopStore) PutCachedRecord(_ context.Context, r versionstore.Record) error {
	s.records.Store(r.Key, r)
	return nil
}

func (nopStore) Diff(context.Context, versionstore.Hash, versionstore.Hash, versionstore.DiffOptions) ([]versionstore.DiffEntry, string, error) {
	return nil, "", errors.New("no commits")
}

func (nopStore) IsAncestor(context.Context, versionstore.Hash, versionstore.Hash) (bool, error) {
	return false, errors.New("no commits")
}

// A record that names another candidate than its key is never handed
// out, and a result round-trips through its record.
func TestResultsNeverStandForAnotherCandidate(t *testing.T) {
	ctx := t.Context()
	st := nopStore{records: &sync.Map{}}
	a, b := versionstore.Hash{1}, versionstore.Hash{2}
	res := &Result{Candidate: Candidate{Commit: b, TargetHead: versionstore.Hash{9}, RequestID: "r", RequiredChecks: []string{"dq"}},
		Checks: []CheckResult{{Name: "lineage", Passed: true, Reason: "ok", DurationSeconds: 0.5}}, Passed: true, ValidatedAt: time.Unix(100, 0).UTC()}
	w, err := newResults(st, 8, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.put(ctx, res); err != nil {
		t.Fatal(err)
	}
	// A fresh reader gets it back from the record.
	r, err := newResults(st, 8, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.get(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Candidate.same(res.Candidate) || len(got.Checks) != 1 || got.Checks[0] != res.Checks[0] || !got.ValidatedAt.Equal(res.ValidatedAt) {
		t.Fatalf("round trip: %+v", got)
	}
	rec, _ := st.GetRecord(ctx, ResultRecordPrefix+b.String())
	if want := res.ValidatedAt.Add(time.Hour); !rec.Expires.Equal(want) {
		t.Errorf("expires %v, want %v", rec.Expires, want)
	}
	// b's record copied under a's key.
	rec.Key = ResultRecordPrefix + a.String()
	_ = st.PutCachedRecord(ctx, *rec)
	if _, err := r.get(ctx, a); !errors.Is(err, ErrNoResult) {
		t.Fatalf("a record naming another candidate: %v", err)
	}
	if _, err := r.get(ctx, versionstore.Hash{3}); !errors.Is(err, ErrNoResult) {
		t.Fatalf("a candidate never validated: %v", err)
	}
}

func TestSameCandidate(t *testing.T) {
	c := Candidate{Commit: versionstore.Hash{1}, TargetHead: versionstore.Hash{2}, RequiredChecks: []string{"a", "b"}}
	o := c
	o.RequiredChecks = []string{"b", "a", "a"}
	if !c.same(o) {
		t.Error("the same checks in another order differ")
	}
	o.RequiredChecks = []string{"a"}
	if c.same(o) {
		t.Error("fewer required checks are the same demands")
	}
	o = c
	o.Commit = versionstore.Hash{3}
	if c.same(o) {
		t.Error("another commit is the same candidate")
	}
	o = c
	o.AllowStructural = true
	if c.same(o) {
		t.Error("an approval is the same demands")
	}
}
