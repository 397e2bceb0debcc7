package versionstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// Record is a small value kept beside the history. The Iceberg REST API
// keeps the outcome of an idempotent request in one, with an expiry; the
// merge queue keeps its state in records without one. A record written by a
// commit, merge or transplant (their Record field) becomes durable in the
// same batch as the commit, and only if the commit is written, so after a
// crash the record tells whether the commit happened.
type Record struct {
	Key   string
	Value []byte
	// Expires is when the record stops being readable and ExpireRecords
	// may delete it. The zero time means it never expires: it lives until
	// it is overwritten.
	Expires time.Time
	// If, when set, makes the write conditional: a compare-and-swap on the
	// record's previous value. A write whose condition does not hold fails
	// with an error wrapping ErrRecordConflict, and so does the commit,
	// merge or transplant carrying it. Reads leave it nil.
	If *RecordCondition
}

// RecordCondition is what a conditional record write expects to find.
// The condition is checked again by the backend when the batch is applied,
// against the exact stored bytes read beforehand, so a write that raced in
// between makes the conditional write fail rather than be overwritten.
type RecordCondition struct {
	// Exists false: the record must be absent (never written, or expired):
	// create-if-absent. Exists true: it must be live and hold exactly
	// Value; its expiry is not compared.
	Exists bool
	Value  []byte
}

// ErrRecordNotFound reports a missing or expired record.
var ErrRecordNotFound = errors.New("record not found")

// ErrRecordConflict reports a conditional record write whose condition did
// not hold: the record changed since the caller read it.
var ErrRecordConflict = errors.New("record conflict")

const kindRecord byte = 'x'

// maxRecordKeyBytes bounds record keys.
const maxRecordKeyBytes = 512

func (r *Record) validate() error {
	if r.Key == "" || len(r.Key) > maxRecordKeyBytes {
		return fmt.Errorf("%w: record key must have 1 to %d bytes", ErrInvalid, maxRecordKeyBytes)
	}
	if !r.Expires.IsZero() && r.Expires.UnixMicro() == noExpiry {
		return fmt.Errorf("%w: record %q: an expiry at the Unix epoch cannot be stored", ErrInvalid, r.Key)
	}
	return nil
}

// noExpiry is the stored expiry of a record that never expires.
const noExpiry = 0

// expired reports whether the record is past its expiry at now.
func (r *Record) expired(now time.Time) bool {
	return !r.Expires.IsZero() && !now.Before(r.Expires)
}

func encodeRecord(r *Record) []byte {
	e := encoder{buf: make([]byte, 0, 16+len(r.Value))}
	e.byte(kindRecord)
	e.byte(formatV1)
	if r.Expires.IsZero() {
		e.varint(noExpiry)
	} else {
		e.varint(r.Expires.UnixMicro())
	}
	e.bytes(r.Value)
	return e.buf
}

func decodeRecord(key string, b []byte) (*Record, error) {
	d := decoder{buf: b}
	d.header(kindRecord)
	r := &Record{Key: key}
	if us := d.varint(); us != noExpiry {
		r.Expires = time.UnixMicro(us).UTC()
	}
	r.Value = d.bytes(maxStringBytes * 4)
	if err := d.finish(); err != nil {
		return nil, fmt.Errorf("decode record %q: %w", key, err)
	}
	return r, nil
}

// preparedRecord is a record write as the backend takes it: the encoded
// record and, for a conditional write, the check that guards it.
type preparedRecord struct {
	record backend.Record
	check  *backend.RecordCheck
}

// prepareRecord validates r and, if it is conditional, reads the stored
// record and evaluates the condition. It runs on the caller's goroutine,
// never a reference's committer, since it may read the backend.
func (s *Store) prepareRecord(ctx context.Context, r *Record) (*preparedRecord, error) {
	if r == nil {
		return nil, nil
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	p := &preparedRecord{record: backend.Record{Key: r.Key, Value: encodeRecord(r)}}
	if r.If == nil {
		return p, nil
	}
	raw, err := s.be.GetRecord(ctx, r.Key)
	switch {
	case errors.Is(err, backend.ErrRecordNotFound):
		raw = nil
	case err != nil:
		return nil, fmt.Errorf("read record %q: %w", r.Key, err)
	}
	live := false
	var cur *Record
	if raw != nil {
		// A record that does not decode counts as absent, as
		// ExpireRecords treats it: garbage nobody can use.
		if d, err := decodeRecord(r.Key, raw); err == nil && !d.expired(s.now()) {
			live, cur = true, d
		}
	}
	switch {
	case r.If.Exists && !live:
		return nil, fmt.Errorf("record %q is absent, the write expected a value: %w", r.Key, ErrRecordConflict)
	case r.If.Exists && !bytes.Equal(cur.Value, r.If.Value):
		return nil, fmt.Errorf("record %q does not hold the expected value: %w", r.Key, ErrRecordConflict)
	case !r.If.Exists && live:
		return nil, fmt.Errorf("record %q exists, the write expected it absent: %w", r.Key, ErrRecordConflict)
	}
	p.check = &backend.RecordCheck{Key: r.Key, Expected: raw}
	return p, nil
}

// recordConflict turns the backend's report of a failed record check into
// the store's error.
func recordConflict(err error) error {
	var rc *backend.RecordConflictError
	if errors.As(err, &rc) {
		return fmt.Errorf("record %q changed concurrently: %w", rc.Key, ErrRecordConflict)
	}
	return err
}

// GetRecord returns a record that has not expired.
func (s *Store) GetRecord(ctx context.Context, key string) (*Record, error) {
	raw, err := s.be.GetRecord(ctx, key)
	if errors.Is(err, backend.ErrRecordNotFound) {
		return nil, fmt.Errorf("%q: %w", key, ErrRecordNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read record %q: %w", key, err)
	}
	r, err := decodeRecord(key, raw)
	if err != nil {
		return nil, err
	}
	if r.expired(s.now()) {
		return nil, fmt.Errorf("%q expired: %w", key, ErrRecordNotFound)
	}
	return r, nil
}

// PutRecord stores a record on its own, durably: unconditionally, or, with
// r.If set, only if the record still holds what the caller expects
// (otherwise an error wrapping ErrRecordConflict).
func (s *Store) PutRecord(ctx context.Context, r Record) error {
	return s.putRecord(ctx, r, false)
}

// PutCachedRecord is PutRecord for a record that only keeps what is also
// kept elsewhere, or can be computed again: it returns before the record
// is durable (backend.Batch.Deferred), so a crash may lose it until the
// next durable write returns. The merge checks keep their results so
// (mergecheck), whose verdicts the merge queue's request records carry
// durably. Readers see it at once.
func (s *Store) PutCachedRecord(ctx context.Context, r Record) error {
	return s.putRecord(ctx, r, true)
}

func (s *Store) putRecord(ctx context.Context, r Record, deferred bool) error {
	if err := s.beginWrite(); err != nil {
		return err
	}
	defer s.closeMu.RUnlock()
	p, err := s.prepareRecord(ctx, &r)
	if err != nil {
		return err
	}
	b := backend.Batch{Records: []backend.Record{p.record}, Deferred: deferred}
	if p.check != nil {
		b.RecordChecks = []backend.RecordCheck{*p.check}
	}
	if err := s.be.Apply(ctx, b); err != nil {
		return fmt.Errorf("store record %q: %w", r.Key, recordConflict(err))
	}
	return nil
}

// PutRecords stores several records in one durable write: all of them,
// or, when any one's condition does not hold (an error wrapping
// ErrRecordConflict naming it), none. A caller changing several records
// at once (the merge queue taking a batch of requests) pays for one
// durable write instead of one per record.
func (s *Store) PutRecords(ctx context.Context, rs []Record) error {
	if len(rs) == 0 {
		return nil
	}
	if err := s.beginWrite(); err != nil {
		return err
	}
	defer s.closeMu.RUnlock()
	var b backend.Batch
	seen := make(map[string]bool, len(rs))
	for i := range rs {
		if seen[rs[i].Key] {
			return fmt.Errorf("%w: record %q written twice in one write", ErrInvalid, rs[i].Key)
		}
		seen[rs[i].Key] = true
		p, err := s.prepareRecord(ctx, &rs[i])
		if err != nil {
			return err
		}
		b.Records = append(b.Records, p.record)
		if p.check != nil {
			b.RecordChecks = append(b.RecordChecks, *p.check)
		}
	}
	if err := s.be.Apply(ctx, b); err != nil {
		return fmt.Errorf("store %d records: %w", len(rs), recordConflict(err))
	}
	return nil
}

// ExpireRecords deletes every record that expired before now and returns
// how many it deleted. Records without an expiry are never deleted. Each
// delete is conditional on the record still holding the expired value, so
// a conditional write that replaced an expired record (which counts as
// absent) in the meantime is never swept away.
func (s *Store) ExpireRecords(ctx context.Context, now time.Time) (int, error) {
	if err := s.beginWrite(); err != nil {
		return 0, err
	}
	defer s.closeMu.RUnlock()
	deleted, after := 0, ""
	for {
		recs, err := s.be.ScanRecords(ctx, after, 512)
		if err != nil {
			return deleted, fmt.Errorf("scan records: %w", err)
		}
		if len(recs) == 0 {
			return deleted, nil
		}
		var (
			expired []string
			checks  []backend.RecordCheck
		)
		pageStart := after
		for _, raw := range recs {
			after = raw.Key
			r, err := decodeRecord(raw.Key, raw.Value)
			// A record that does not decode is garbage of no use to
			// anyone; expiring it is the only way to be rid of it.
			if err != nil || r.expired(now) {
				expired = append(expired, raw.Key)
				checks = append(checks, backend.RecordCheck{Key: raw.Key, Expected: raw.Value})
			}
		}
		if len(expired) > 0 {
			err := s.be.Apply(ctx, backend.Batch{RecordChecks: checks, DeleteRecords: expired})
			if errors.Is(err, backend.ErrRecordConflict) {
				// One of them was rewritten since the scan: scan the
				// page again, which now sees it live.
				after = pageStart
				continue
			}
			if err != nil {
				return deleted, fmt.Errorf("delete expired records: %w", err)
			}
			deleted += len(expired)
		}
	}
}
