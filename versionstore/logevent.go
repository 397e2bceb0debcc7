package versionstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// RefLogEvent is the operation of a reference-log entry that moves no
// reference: something that happened beside the history (a merge-queue
// request changed state, a garbage collection ran, a policy bundle was
// activated) and that the change feed must report in the same order as
// the moves. Its Ref is the event's subject (a branch, or ""), From is
// zero and To names the immutable object holding the event (ReadLogEvent).
// RefLog, which lists reference moves, leaves these entries out.
const RefLogEvent RefLogOp = "EVENT"

// kindEvent is the kind byte of an event's object.
const kindEvent byte = 'e'

// maxEventBytes bounds an event's payload.
const maxEventBytes = 1 << 20

// LogEvent is an event appended to the reference log by AppendEvent.
type LogEvent struct {
	// Kind says what happened, in the caller's vocabulary (the change
	// feed's: "queue", "gc", "policy").
	Kind string
	// Subject is what the event is about: a branch name, or "".
	Subject string
	// Principal is who caused it; Time is set by the store.
	Principal string
	// Payload is the event's document (JSON, for the change feed).
	Payload []byte
}

func encodeEvent(ev *LogEvent) []byte {
	e := encoder{buf: make([]byte, 0, 16+len(ev.Kind)+len(ev.Payload))}
	e.byte(kindEvent)
	e.byte(formatV1)
	e.string(ev.Kind)
	e.bytes(ev.Payload)
	return e.buf
}

func decodeEvent(b []byte) (kind string, payload []byte, err error) {
	d := decoder{buf: b}
	d.header(kindEvent)
	kind = d.string(64)
	payload = d.bytes(maxEventBytes)
	if err := d.finish(); err != nil {
		return "", nil, fmt.Errorf("decode event: %w", err)
	}
	return kind, payload, nil
}

// AppendEvent appends ev to the reference log, with records, in one
// durable write: the event's object, the log entry naming it and every
// record become durable together, or none does (a record whose condition
// fails fails it all, with an error wrapping ErrRecordConflict). A caller
// that changes its own state in a record and must report the change in
// the log's order writes both here, so that no event exists for a state
// that was not written, and no written state lacks its event. It returns
// the entry without its Seq, which the backend assigns.
func (s *Store) AppendEvent(ctx context.Context, ev LogEvent, records ...Record) (*RefLogEntry, error) {
	entries, err := s.AppendEvents(ctx, []LogEvent{ev}, records...)
	if err != nil {
		return nil, err
	}
	return entries[0], nil
}

// AppendEvents is AppendEvent for several events, appended in order in
// the same durable write.
func (s *Store) AppendEvents(ctx context.Context, evs []LogEvent, records ...Record) ([]*RefLogEntry, error) {
	if len(evs) == 0 {
		return nil, fmt.Errorf("%w: no event to append", ErrInvalid)
	}
	if err := s.beginWrite(); err != nil {
		return nil, err
	}
	defer s.closeMu.RUnlock()
	var b backend.Batch
	entries := make([]*RefLogEntry, 0, len(evs))
	for i := range evs {
		obj, entry, err := s.eventEntry(&evs[i])
		if err != nil {
			return nil, err
		}
		b.Objects = append(b.Objects, obj)
		b.Log = append(b.Log, encodeRefLog(entry))
		entries = append(entries, entry)
	}
	seen := make(map[string]bool, len(records))
	for i := range records {
		if seen[records[i].Key] {
			return nil, fmt.Errorf("%w: record %q written twice in one write", ErrInvalid, records[i].Key)
		}
		seen[records[i].Key] = true
		p, err := s.prepareRecord(ctx, &records[i])
		if err != nil {
			return nil, err
		}
		b.Records = append(b.Records, p.record)
		if p.check != nil {
			b.RecordChecks = append(b.RecordChecks, *p.check)
		}
	}
	if err := s.be.Apply(ctx, b); err != nil {
		return nil, fmt.Errorf("append %d event(s), %s first: %w", len(evs), evs[0].Kind, recordConflict(err))
	}
	return entries, nil
}

// eventEntry validates ev and returns its object and the log entry that
// names it.
func (s *Store) eventEntry(ev *LogEvent) (backend.Object, *RefLogEntry, error) {
	switch {
	case ev.Kind == "" || len(ev.Kind) > 64:
		return backend.Object{}, nil, fmt.Errorf("%w: an event's kind must have 1 to 64 bytes", ErrInvalid)
	case len(ev.Subject) > maxRefNameBytes:
		return backend.Object{}, nil, fmt.Errorf("%w: an event's subject must have at most %d bytes", ErrInvalid, maxRefNameBytes)
	case len(ev.Payload) > maxEventBytes:
		return backend.Object{}, nil, fmt.Errorf("%w: an event's payload must have at most %d bytes", ErrInvalid, maxEventBytes)
	}
	data := encodeEvent(ev)
	h := hashOf(data)
	entry := &RefLogEntry{Ref: ev.Subject, Op: RefLogEvent, To: h, Principal: ev.Principal, Time: s.now()}
	if ev.Subject != "" {
		entry.RefType = Branch
	}
	return backend.Object{ID: h, Data: data}, entry, nil
}

// ReadLogEvent returns the event of a RefLogEvent entry: its kind and
// payload.
func (s *Store) ReadLogEvent(ctx context.Context, e *RefLogEntry) (kind string, payload []byte, err error) {
	if e.Op != RefLogEvent {
		return "", nil, fmt.Errorf("%w: reference log entry %d is a %s, not an event", ErrInvalid, e.Seq, e.Op)
	}
	data, err := s.be.GetObject(ctx, e.To)
	if errors.Is(err, backend.ErrObjectNotFound) {
		return "", nil, fmt.Errorf("%w: event object %s of reference log entry %d is missing", ErrCorrupt, e.To, e.Seq)
	}
	if err != nil {
		return "", nil, fmt.Errorf("read event of reference log entry %d: %w", e.Seq, err)
	}
	if hashOf(data) != e.To {
		return "", nil, fmt.Errorf("%w: event object %s of reference log entry %d does not match its hash", ErrCorrupt, e.To, e.Seq)
	}
	return decodeEvent(data)
}
