package mergecheck

import (
	"slices"

	"github.com/floe-catalog/floe/versionstore"
)

// Candidate is one merge candidate to validate, as the merge queue
// describes it: Commit is a commit of the store whose first parent is
// TargetHead, the head of branch Target the queue read, holding the
// merge of SourceRef (at SourceHash) that request RequestID of Principal
// asked for. Its tables are readable at warehouse "<name>@<Commit>".
type Candidate struct {
	RequestID  string
	Target     string
	TargetHead versionstore.Hash
	Commit     versionstore.Hash
	SourceRef  string
	SourceHash versionstore.Hash
	Principal  string
	// RequiredChecks name the external checks (Options.External) the
	// candidate must pass. Built-in check names may appear too; they run
	// for every candidate anyway.
	RequiredChecks []string
	// AllowStructural lets schema, spec and sort-order changes pass the
	// schema check: the queue sets it when a permitted principal approved
	// the request in review.
	AllowStructural bool
}

// same reports whether c and o are the same candidate with the same
// demands, so that a result of one stands for the other.
func (c Candidate) same(o Candidate) bool {
	a, b := slices.Clone(c.RequiredChecks), slices.Clone(o.RequiredChecks)
	slices.Sort(a)
	slices.Sort(b)
	return c.Commit == o.Commit && c.TargetHead == o.TargetHead && c.Target == o.Target &&
		c.RequestID == o.RequestID && c.Principal == o.Principal && c.SourceRef == o.SourceRef &&
		c.SourceHash == o.SourceHash && c.AllowStructural == o.AllowStructural &&
		slices.Equal(slices.Compact(a), slices.Compact(b))
}

// CheckResult is the outcome of one check on one candidate.
type CheckResult struct {
	Name            string  `json:"name"`
	Passed          bool    `json:"passed"`
	Reason          string  `json:"reason"`
	DurationSeconds float64 `json:"durationSeconds"`
}

// Names of the built-in checks, in the order they run and are reported.
const (
	CheckLineage  = "lineage"
	CheckSchema   = "schema"
	CheckRowCount = "row-count"
	CheckNulls    = "nulls"
	CheckPolicy   = "policy"
)

// BuiltinChecks lists the built-in checks' names.
func BuiltinChecks() []string {
	return []string{CheckLineage, CheckSchema, CheckRowCount, CheckNulls, CheckPolicy}
}
