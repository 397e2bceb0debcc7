package mergequeue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/floe-catalog/floe/internal/apidoc"
	"github.com/floe-catalog/floe/versionstore"
)

// Request is one merge request as the API answers it and the queue keeps
// it in memory; its record in the store is a storedRequest (record.go).
type Request = apidoc.MergeRequest

// Report is the queue's summary (Queue.Report).
type Report = apidoc.MergeQueueReport

// The classifications of a request: the heaviest of its tables'.
const (
	ClassFastForward = "fast-forward"
	ClassCherryPick  = "cherry-pick"
	ClassRebase      = "rebase"
	ClassStructural  = "structural"
)

// CandidatePrefix names the queue's own branches: the candidates it builds
// at a target's head before moving the target. Nothing else should write
// them; the queue deletes them once a batch lands or fails, and on start.
const CandidatePrefix = "floe-queue/"

// recordPrefix keys the requests' records in the store.
const recordPrefix = "mergequeue/request/"

func recordKey(id string) string { return recordPrefix + id }

// Validator validates a candidate: the exact commit the target would move
// to. It is called once per candidate commit; results are never reused for
// another candidate. An error counts as a failed validation with the
// error as its reason.
type Validator interface {
	Validate(ctx context.Context, c Candidate) ([]CheckResult, error)
}

// ValidatorFunc adapts a function to Validator.
type ValidatorFunc func(ctx context.Context, c Candidate) ([]CheckResult, error)

// Validate calls f.
func (f ValidatorFunc) Validate(ctx context.Context, c Candidate) ([]CheckResult, error) {
	return f(ctx, c)
}

// Candidate is what a validator judges: request RequestID's changes merged
// onto Target's head TargetHead (after the requests ahead of it in its
// batch), giving Commit, readable as lake@<Commit>. CandidateRef is the
// candidate branch Commit is on; its head moves on while the batch's later
// members are merged (their checks run meanwhile), so a check reads
// Commit, not the branch. Tables are the tables the request merges.
type Candidate struct {
	RequestID      string
	Target         string
	TargetHead     versionstore.Hash
	Commit         versionstore.Hash
	CandidateRef   string
	SourceRef      string
	SourceHash     versionstore.Hash
	Principal      string
	RequiredChecks []string
	Tables         []versionstore.ContentKey
	// Approved says a reviewer approved the request's structural change,
	// which the validator then lets pass.
	Approved bool
}

// CheckResult is one check's verdict.
type CheckResult = apidoc.MergeCheckResult

// SubmitRequest asks for a merge request.
type SubmitRequest struct {
	// Source is a ref expression (branch, tag, name@hash, @hash); it is
	// resolved when the request is made.
	Source string
	// Target is the branch merged into.
	Target string
	// Tables, if set, restricts the merge to these tables (dotted names).
	Tables         []string
	Priority       int
	RequiredChecks []string
	IdempotencyKey string
	Message        string
	Principal      string
}

// requestID names a new request: derived from the idempotency key (with
// the principal, whose keys they are) so a retried submit finds the first,
// or random.
func requestID(principal, key string) string {
	if key == "" {
		return "mr-" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20]
	}
	sum := sha256.Sum256([]byte(principal + "\x00" + key))
	return "mr-" + hex.EncodeToString(sum[:10])
}

// cloneRequest deep-copies r: every slice and pointer a caller might
// modify is its own, and every value equals r's. Readers (Get, List, the
// API's polling clients) clone on each call, so it must be cheap: a JSON
// round trip of the audit trail and validations cost as much CPU as the
// merges of the queue it reported on. TestCloneRequestIsDeep fails when a
// field the copy shares with r is added.
func cloneRequest(r *Request) *Request {
	c := *r
	c.Tables = slices.Clone(r.Tables)
	c.RequiredChecks = slices.Clone(r.RequiredChecks)
	c.RetryAt = cloneTime(r.RetryAt)
	c.StartedAt = cloneTime(r.StartedAt)
	c.EndedAt = cloneTime(r.EndedAt)
	c.TableClasses = slices.Clone(r.TableClasses)
	if r.Validations != nil {
		c.Validations = make([]apidoc.MergeValidation, len(r.Validations))
		for i, v := range r.Validations {
			v.Results = slices.Clone(v.Results)
			c.Validations[i] = v
		}
	}
	c.Hygiene = slices.Clone(r.Hygiene)
	c.Audit = slices.Clone(r.Audit)
	return &c
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

// parseTable reads a dotted table name.
func parseTable(s string) (versionstore.ContentKey, error) {
	k := versionstore.ContentKey(strings.Split(s, "."))
	if err := k.Validate(); err != nil || len(k) < 2 {
		return nil, fmt.Errorf("%w: table %q: want namespace.name", versionstore.ErrInvalid, s)
	}
	return k, nil
}
