package eventhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/versionstore"
)

// State is a subscription's durable delivery state, kept in the record
// RecordKey(name). It is the subscription's outbox.
//
// The invariant: every event of the change feed after Cursor that the
// subscription selects (its filter, and its principal's read rights when
// the event is read) is delivered, and no event at or before Cursor needs
// to be. The deliverer moves Cursor past an event only after the receiver
// answered it with a 2xx, or past events the subscription does not
// select; it delivers in the feed's order, one event at a time. Since the
// feed after a cursor is the same whenever and wherever it is read
// (changefeed.Cursor), a deliverer that restarts, is killed, or is
// replaced by another replica's resumes from the durable Cursor and
// misses nothing: at least once, in order. What it may repeat is what it
// delivered after the last durable write of Cursor (the deliverer writes
// it once per page of events, and with every failed attempt), each event
// again in order; a receiver recognises a repeat by its id (CloudEvent.ID).
//
// Every write of the record is a compare-and-swap on the value the writer
// read, so two writers never both win: a deliverer that was replaced (its
// replica lost the lease) or whose subscription an operator resumed reads
// the record again and goes on from what it holds, and a cursor never
// moves back.
type State struct {
	Cursor changefeed.Cursor `json:"cursor"`
	// Status is StatusActive or StatusDeadLetter.
	Status string `json:"status"`
	// Pending is the event being retried, or the dead-lettered one (the
	// zero Cursor, which no event has, when none);
	// Attempts the failed attempts at it, LastError the last failure's
	// reason, and NextAttempt when it is tried again.
	Pending     changefeed.Cursor `json:"pending,omitzero"`
	PendingType changefeed.Type   `json:"pendingType,omitempty"`
	PendingRef  string            `json:"pendingRef,omitempty"`
	Attempts    int               `json:"attempts,omitempty"`
	LastError   string            `json:"lastError,omitempty"`
	LastAttempt time.Time         `json:"lastAttempt,omitzero"`
	NextAttempt time.Time         `json:"nextAttempt,omitzero"`
	// DeadLetteredAt is when the subscription entered StatusDeadLetter.
	DeadLetteredAt time.Time `json:"deadLetteredAt,omitzero"`
	// Delivered counts events delivered (as of the last durable write);
	// LastDelivered is the time of the last durable write that moved
	// Cursor past a delivered event.
	Delivered     uint64    `json:"delivered"`
	LastDelivered time.Time `json:"lastDelivered,omitzero"`
}

// Statuses of a subscription.
const (
	// StatusActive: delivering, or retrying Pending.
	StatusActive = "active"
	// StatusDeadLetter: Pending failed MaxAttempts times; nothing is
	// delivered until an operator resumes the subscription (Resume),
	// retrying Pending or skipping it. Cursor stays before Pending, so
	// nothing after it is lost meanwhile.
	StatusDeadLetter = "dead-letter"
)

// recordPrefix keeps the subscriptions' records apart from others.
const recordPrefix = "eventhooks/"

// RecordKey is the key of subscription name's state record.
func RecordKey(name string) string { return recordPrefix + name }

// ErrUnknownSubscription reports a name no subscription has.
var ErrUnknownSubscription = errors.New("no such webhook subscription")

// retrying reports whether an event is pending.
func (st *State) retrying() bool { return st.Pending != changefeed.Cursor{} }

// stored is a state as read, with the exact bytes a conditional write
// must find.
type stored struct {
	State
	raw []byte
}

// loadState reads a subscription's state; nil when it has none yet.
func loadState(ctx context.Context, s *versionstore.Store, name string) (*stored, error) {
	r, err := s.GetRecord(ctx, RecordKey(name))
	if errors.Is(err, versionstore.ErrRecordNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the state of subscription %s: %w", name, err)
	}
	st := &stored{raw: r.Value}
	if err := json.Unmarshal(r.Value, &st.State); err != nil {
		return nil, fmt.Errorf("subscription %s: state %q: %w", name, r.Value, err)
	}
	return st, nil
}

// saveState writes next over prev (nil: create), durably, if the record
// still holds prev; otherwise an error wrapping
// versionstore.ErrRecordConflict.
func saveState(ctx context.Context, s *versionstore.Store, name string, prev *stored, next State) (*stored, error) {
	raw, err := json.Marshal(next)
	if err != nil {
		return nil, err
	}
	cond := &versionstore.RecordCondition{}
	if prev != nil {
		cond = &versionstore.RecordCondition{Exists: true, Value: prev.raw}
	}
	if err := s.PutRecord(ctx, versionstore.Record{Key: RecordKey(name), Value: raw, If: cond}); err != nil {
		return nil, fmt.Errorf("write the state of subscription %s: %w", name, err)
	}
	return &stored{State: next, raw: raw}, nil
}
