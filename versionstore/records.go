package versionstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// Record is a small value kept beside the history until it expires. The
// Iceberg REST API keeps the outcome of an idempotent request in one; a
// record written by a commit (CommitRequest.Record) becomes durable in the
// same batch as the commit, so after a crash the record tells whether the
// commit happened.
type Record struct {
	Key     string
	Value   []byte
	Expires time.Time
}

// ErrRecordNotFound reports a missing or expired record.
var ErrRecordNotFound = errors.New("record not found")

const kindRecord byte = 'x'

// maxRecordKeyBytes bounds record keys.
const maxRecordKeyBytes = 512

func (r *Record) validate() error {
	if r.Key == "" || len(r.Key) > maxRecordKeyBytes {
		return fmt.Errorf("%w: record key must have 1 to %d bytes", ErrInvalid, maxRecordKeyBytes)
	}
	if r.Expires.IsZero() {
		return fmt.Errorf("%w: record %q needs an expiry time", ErrInvalid, r.Key)
	}
	return nil
}

func encodeRecord(r *Record) []byte {
	e := encoder{buf: make([]byte, 0, 16+len(r.Value))}
	e.byte(kindRecord)
	e.byte(formatV1)
	e.varint(r.Expires.UnixMicro())
	e.bytes(r.Value)
	return e.buf
}

func decodeRecord(key string, b []byte) (*Record, error) {
	d := decoder{buf: b}
	d.header(kindRecord)
	r := &Record{Key: key}
	r.Expires = time.UnixMicro(d.varint()).UTC()
	r.Value = d.bytes(maxStringBytes * 4)
	if err := d.finish(); err != nil {
		return nil, fmt.Errorf("decode record %q: %w", key, err)
	}
	return r, nil
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
	if !s.now().Before(r.Expires) {
		return nil, fmt.Errorf("%q expired: %w", key, ErrRecordNotFound)
	}
	return r, nil
}

// PutRecord stores a record on its own, durably.
func (s *Store) PutRecord(ctx context.Context, r Record) error {
	if err := r.validate(); err != nil {
		return err
	}
	if err := s.beginWrite(); err != nil {
		return err
	}
	defer s.closeMu.RUnlock()
	if err := s.be.Apply(ctx, backend.Batch{Records: []backend.Record{{Key: r.Key, Value: encodeRecord(&r)}}}); err != nil {
		return fmt.Errorf("store record %q: %w", r.Key, err)
	}
	return nil
}

// ExpireRecords deletes every record that expired before now and returns
// how many it deleted.
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
		var expired []string
		for _, raw := range recs {
			after = raw.Key
			r, err := decodeRecord(raw.Key, raw.Value)
			// A record that does not decode is garbage of no use to
			// anyone; expiring it is the only way to be rid of it.
			if err != nil || !now.Before(r.Expires) {
				expired = append(expired, raw.Key)
			}
		}
		if len(expired) > 0 {
			if err := s.be.Apply(ctx, backend.Batch{DeleteRecords: expired}); err != nil {
				return deleted, fmt.Errorf("delete expired records: %w", err)
			}
			deleted += len(expired)
		}
	}
}
