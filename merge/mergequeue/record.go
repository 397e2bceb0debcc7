package mergequeue

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/floe-catalog/floe/internal/apidoc"
)

// The stored form of a request: what a record under recordPrefix holds.
//
// It is the queue's own type, apart from the API document
// (apidoc.MergeRequest, which the queue keeps in memory and the API
// answers): the document may change for its readers without changing
// what stores hold, and a record's format changes only here.
//
// Invariant: a request encodes to exactly the bytes earlier floe versions
// wrote for it, when the record was the API document itself: the same
// field names, in the same order, with the same omissions.
// TestRecordFormat reads such records (testdata/records) and writes them
// again byte for byte. Records are compared by bytes (the compare-and-swap
// of every write, and refresh across replicas), so a format change would
// make every record of a running queue look changed. A new field goes at
// its document position with omitempty, and old records still load.
type storedRequest struct {
	ID             string           `json:"id"`
	Seq            uint64           `json:"seq"`
	Target         string           `json:"target"`
	Source         string           `json:"source"`
	SourceRef      string           `json:"sourceRef,omitempty"`
	SourceHash     string           `json:"sourceHash"`
	Tables         []string         `json:"tables,omitempty"`
	Priority       int              `json:"priority,omitempty"`
	RequiredChecks []string         `json:"requiredChecks,omitempty"`
	IdempotencyKey string           `json:"idempotencyKey,omitempty"`
	Message        string           `json:"message,omitempty"`
	Principal      string           `json:"principal"`
	Class          string           `json:"class"`
	State          string           `json:"state"`
	Reason         string           `json:"reason,omitempty"`
	ReasonCode     string           `json:"reasonCode,omitempty"`
	Faults         int              `json:"faults,omitempty"`
	RetryAt        *time.Time       `json:"retryAt,omitempty"`
	EnqueuedAt     time.Time        `json:"enqueuedAt"`
	StartedAt      *time.Time       `json:"startedAt,omitempty"`
	EndedAt        *time.Time       `json:"endedAt,omitempty"`
	Approved       bool             `json:"approved,omitempty"`
	Classification string           `json:"classification,omitempty"`
	TableClasses   []storedTable    `json:"tableClasses,omitempty"`
	Batched        bool             `json:"batched,omitempty"`
	Validations    []storedCheckRun `json:"validations,omitempty"`
	LandedCommit   string           `json:"landedCommit,omitempty"`
	LandedOnto     string           `json:"landedOnto,omitempty"`
	Hygiene        []string         `json:"hygiene,omitempty"`
	Audit          []storedChange   `json:"audit"`
}

// storedTable is one table's classification (apidoc.MergeRequestTable).
type storedTable struct {
	Table  string `json:"table"`
	Class  string `json:"class"`
	Reason string `json:"reason,omitempty"`
}

// storedCheckRun is one validation of a candidate
// (apidoc.MergeValidation).
type storedCheckRun struct {
	Candidate  string              `json:"candidate"`
	TargetHead string              `json:"targetHead"`
	At         time.Time           `json:"at"`
	Passed     bool                `json:"passed"`
	Results    []storedCheckResult `json:"results"`
	Error      string              `json:"error,omitempty"`
}

// storedCheckResult is one check's verdict (apidoc.MergeCheckResult).
type storedCheckResult struct {
	Name            string  `json:"name"`
	Passed          bool    `json:"passed"`
	Reason          string  `json:"reason,omitempty"`
	DurationSeconds float64 `json:"durationSeconds"`
}

// storedChange is one entry of the audit trail
// (apidoc.MergeRequestChange).
type storedChange struct {
	At        time.Time `json:"at"`
	From      string    `json:"from,omitempty"`
	To        string    `json:"to"`
	Reason    string    `json:"reason,omitempty"`
	Principal string    `json:"principal"`
	Candidate string    `json:"candidate,omitempty"`
}

func encodeRequest(r *Request) []byte {
	b, _ := json.Marshal(storedFrom(r)) // strings, numbers, times and slices of them: cannot fail
	return b
}

func decodeRequest(b []byte) (*Request, error) {
	var s storedRequest
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("decode merge request: %w", err)
	}
	return s.request(), nil
}

// storedFrom is r's stored form. It shares r's immutable parts (strings,
// and the times pointers point to, which are never written through).
func storedFrom(r *Request) *storedRequest {
	return &storedRequest{
		ID: r.ID, Seq: r.Seq, Target: r.Target, Source: r.Source, SourceRef: r.SourceRef, SourceHash: r.SourceHash,
		Tables: r.Tables, Priority: r.Priority, RequiredChecks: r.RequiredChecks, IdempotencyKey: r.IdempotencyKey,
		Message: r.Message, Principal: r.Principal, Class: r.Class, State: r.State, Reason: r.Reason, ReasonCode: r.ReasonCode,
		Faults: r.Faults, RetryAt: r.RetryAt, EnqueuedAt: r.EnqueuedAt, StartedAt: r.StartedAt, EndedAt: r.EndedAt,
		Approved: r.Approved, Classification: r.Classification,
		TableClasses: convert(r.TableClasses, func(t apidoc.MergeRequestTable) storedTable { return storedTable(t) }),
		Batched:      r.Batched,
		Validations: convert(r.Validations, func(v apidoc.MergeValidation) storedCheckRun {
			return storedCheckRun{Candidate: v.Candidate, TargetHead: v.TargetHead, At: v.At, Passed: v.Passed, Error: v.Error,
				Results: convert(v.Results, func(c apidoc.MergeCheckResult) storedCheckResult { return storedCheckResult(c) })}
		}),
		LandedCommit: r.LandedCommit, LandedOnto: r.LandedOnto, Hygiene: r.Hygiene,
		Audit: convert(r.Audit, func(c apidoc.MergeRequestChange) storedChange { return storedChange(c) }),
	}
}

// request is the API document of s: a request of its own, sharing nothing
// with s.
func (s *storedRequest) request() *Request {
	return &Request{
		ID: s.ID, Seq: s.Seq, Target: s.Target, Source: s.Source, SourceRef: s.SourceRef, SourceHash: s.SourceHash,
		Tables: slices.Clone(s.Tables), Priority: s.Priority, RequiredChecks: slices.Clone(s.RequiredChecks), IdempotencyKey: s.IdempotencyKey,
		Message: s.Message, Principal: s.Principal, Class: s.Class, State: s.State, Reason: s.Reason, ReasonCode: s.ReasonCode,
		Faults: s.Faults, RetryAt: cloneTime(s.RetryAt), EnqueuedAt: s.EnqueuedAt, StartedAt: cloneTime(s.StartedAt), EndedAt: cloneTime(s.EndedAt),
		Approved: s.Approved, Classification: s.Classification,
		TableClasses: convert(s.TableClasses, func(t storedTable) apidoc.MergeRequestTable { return apidoc.MergeRequestTable(t) }),
		Batched:      s.Batched,
		Validations: convert(s.Validations, func(v storedCheckRun) apidoc.MergeValidation {
			return apidoc.MergeValidation{Candidate: v.Candidate, TargetHead: v.TargetHead, At: v.At, Passed: v.Passed, Error: v.Error,
				Results: convert(v.Results, func(c storedCheckResult) apidoc.MergeCheckResult { return apidoc.MergeCheckResult(c) })}
		}),
		LandedCommit: s.LandedCommit, LandedOnto: s.LandedOnto, Hygiene: slices.Clone(s.Hygiene),
		Audit: convert(s.Audit, func(c storedChange) apidoc.MergeRequestChange { return apidoc.MergeRequestChange(c) }),
	}
}

// convert maps a slice, keeping nil nil and empty empty (the JSON of one
// is null, of the other []).
func convert[A, B any](in []A, f func(A) B) []B {
	if in == nil {
		return nil
	}
	out := make([]B, len(in))
	for i, a := range in {
		out[i] = f(a)
	}
	return out
}
