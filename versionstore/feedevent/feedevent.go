package feedevent

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/floe-catalog/floe/versionstore"
)

// Events that are not reference moves: a merge request changing state, a
// garbage collection run, a policy bundle activated. Whoever makes the
// change appends its event to the reference log with
// versionstore.AppendEvent, in the same durable write as the change's own
// record where it has one (the request's record, the last GC report), so
// the event exists exactly when the change was written, in the log's
// order. The helpers below build those events; the change feed
// (catalog/changefeed) reads them back.

// The kinds of versionstore.LogEvent the feed knows.
const (
	KindQueue  = "queue"
	KindGC     = "gc"
	KindPolicy = "policy"
)

// QueueChange is a merge-queue request's change of state.
type QueueChange struct {
	// Request is the merge request's id; Source the branch it merges.
	Request string `json:"request"`
	Source  string `json:"source,omitempty"`
	// From and To are the states before and after ("" From: submitted).
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	// Reason says why, in words (a failed check, a conflict, a review).
	Reason string `json:"reason,omitempty"`
	// Commit is the commit that landed, when To is merged.
	Commit string `json:"commit,omitempty"`
}

// GCRun is a garbage collection run that deleted (or tried to delete)
// warehouse files; dry runs change nothing and have no event.
type GCRun struct {
	ID           string    `json:"id"`
	Started      time.Time `json:"started"`
	Finished     time.Time `json:"finished"`
	Outcome      string    `json:"outcome"`
	Error        string    `json:"error,omitempty"`
	Refs         int       `json:"refs"`
	Live         int64     `json:"live"`
	Deleted      int64     `json:"deleted"`
	DeletedBytes int64     `json:"deletedBytes"`
	DeleteErrors int64     `json:"deleteErrors"`
}

// PolicyActivation is a policy bundle a replica activated.
type PolicyActivation struct {
	// Source is where the bundle came from (a file, a directory, an HTTP
	// bundle server, the embedded default).
	Source           string `json:"source"`
	Revision         string `json:"revision,omitempty"`
	PreviousRevision string `json:"previousRevision,omitempty"`
	// Replica names the process that activated it (each replica
	// activates bundles on its own).
	Replica string `json:"replica,omitempty"`
}

// QueueEvent is the log event of a merge request's change of state on
// target, made by principal.
func QueueEvent(target, principal string, c QueueChange) (versionstore.LogEvent, error) {
	return logEvent(KindQueue, target, principal, c)
}

// GCEvent is the log event of a garbage collection run.
func GCEvent(principal string, run GCRun) (versionstore.LogEvent, error) {
	return logEvent(KindGC, "", principal, run)
}

// PolicyEvent is the log event of a policy bundle activation.
func PolicyEvent(a PolicyActivation) (versionstore.LogEvent, error) {
	return logEvent(KindPolicy, "", "floe", a)
}

func logEvent(kind, subject, principal string, doc any) (versionstore.LogEvent, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return versionstore.LogEvent{}, fmt.Errorf("encode %s event: %w", kind, err)
	}
	return versionstore.LogEvent{Kind: kind, Subject: subject, Principal: principal, Payload: b}, nil
}
