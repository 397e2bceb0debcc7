package apidoc

import "time"

// MergeRequest is one request of the merge queue (package mergequeue), as
// floe's API answers it under /merge-requests and the queue stores it.
type MergeRequest struct {
	ID string `json:"id"`
	// Seq orders requests by arrival: the queue takes them by it.
	Seq    uint64 `json:"seq"`
	Target string `json:"target"`
	// Source is the ref expression merged (a branch, tag, name@hash or
	// @hash); SourceRef its ref name ("" for a bare hash) and SourceHash
	// the commit it named when the request was made: what is merged, even
	// if the branch moves later.
	Source     string `json:"source"`
	SourceRef  string `json:"sourceRef,omitempty"`
	SourceHash string `json:"sourceHash"`
	// Tables, if set, is the subset of tables merged (dotted names);
	// empty means every change on the source. Either way it lands in one
	// commit.
	Tables         []string `json:"tables,omitempty"`
	Priority       int      `json:"priority,omitempty"`
	RequiredChecks []string `json:"requiredChecks,omitempty"`
	IdempotencyKey string   `json:"idempotencyKey,omitempty"`
	Message        string   `json:"message,omitempty"`
	Principal      string   `json:"principal"`
	// Class is the branch-prefix class of the source (ingest, transform,
	// users, backfill, ... or other), from the hygiene rules.
	Class  string `json:"class"`
	State  string `json:"state"`
	Reason string `json:"reason,omitempty"`
	// ReasonCode is a stable word for the reason of a final state other
	// than merged (conflict, refused, check-failed, nothing-to-merge,
	// target-gone, invalid, fault, cancelled, rejected), used by the
	// report and metrics.
	ReasonCode string `json:"reasonCode,omitempty"`
	// Faults counts the attempts whose merge failed on a storage fault
	// (the warehouse could not be read or written), which are retried;
	// RetryAt is when the worker takes the request again after the last
	// one (it stays queued until then).
	Faults     int        `json:"faults,omitempty"`
	RetryAt    *time.Time `json:"retryAt,omitempty"`
	EnqueuedAt time.Time  `json:"enqueuedAt"`
	// StartedAt is when the worker first took the request; EndedAt when
	// it reached a final state.
	StartedAt *time.Time `json:"startedAt,omitempty"`
	EndedAt   *time.Time `json:"endedAt,omitempty"`
	// Approved says a reviewer approved its structural change.
	Approved bool `json:"approved,omitempty"`
	// Classification is the heaviest class of its tables: fast-forward,
	// cherry-pick, rebase or structural; Tables per table.
	Classification string               `json:"classification,omitempty"`
	TableClasses   []MergeRequestTable  `json:"tableClasses,omitempty"`
	Batched        bool                 `json:"batched,omitempty"`
	Validations    []MergeValidation    `json:"validations,omitempty"`
	LandedCommit   string               `json:"landedCommit,omitempty"`
	LandedOnto     string               `json:"landedOnto,omitempty"`
	Hygiene        []string             `json:"hygiene,omitempty"`
	Audit          []MergeRequestChange `json:"audit"`
}

// MergeRequestTable is the classification of one table of a request.
type MergeRequestTable struct {
	Table  string `json:"table"`
	Class  string `json:"class"`
	Reason string `json:"reason,omitempty"`
}

// MergeValidation is one validation of a request: the candidate commit it
// ran on (built on TargetHead) and each check's result. A result holds for
// exactly that candidate; a rebuilt candidate is validated again.
type MergeValidation struct {
	Candidate  string             `json:"candidate"`
	TargetHead string             `json:"targetHead"`
	At         time.Time          `json:"at"`
	Passed     bool               `json:"passed"`
	Results    []MergeCheckResult `json:"results"`
	Error      string             `json:"error,omitempty"`
}

// MergeCheckResult is one check's verdict on a candidate.
type MergeCheckResult struct {
	Name            string  `json:"name"`
	Passed          bool    `json:"passed"`
	Reason          string  `json:"reason,omitempty"`
	DurationSeconds float64 `json:"durationSeconds"`
}

// MergeRequestChange is one entry of a request's audit trail: a state
// change, when, why and by whom.
type MergeRequestChange struct {
	At        time.Time `json:"at"`
	From      string    `json:"from,omitempty"`
	To        string    `json:"to"`
	Reason    string    `json:"reason,omitempty"`
	Principal string    `json:"principal"`
	Candidate string    `json:"candidate,omitempty"`
}

// MergeQueueReport is the queue's summary since a time: the table the
// team reads the next morning.
type MergeQueueReport struct {
	Since   time.Time                `json:"since"`
	Until   time.Time                `json:"until"`
	Classes []MergeQueueReportClass  `json:"classes"`
	States  map[string]int           `json:"states"`
	Bypass  map[string]int           `json:"bypassCommits,omitempty"`
	Pending []MergeQueueReportTarget `json:"pending"`
}

// MergeQueueReportClass is one request class's line of the report.
type MergeQueueReportClass struct {
	Class string `json:"class"`
	Count int    `json:"count"`
	// Classification counts the requests of each classification.
	Classification map[string]int `json:"classification"`
	// Batched counts the requests landed in a batch of several.
	Batched            int            `json:"batched"`
	MedianWaitSeconds  float64        `json:"medianWaitSeconds"`
	MedianMergeSeconds float64        `json:"medianMergeSeconds"`
	Failures           int            `json:"failures"`
	FailureReasons     map[string]int `json:"failureReasons"`
	Review             int            `json:"review"`
	Cancelled          int            `json:"cancelled"`
	Rejected           int            `json:"rejected"`
}

// MergeQueueReportTarget is the depth of one target's queue.
type MergeQueueReportTarget struct {
	Target string `json:"target"`
	Queued int    `json:"queued"`
	Review int    `json:"review"`
}
