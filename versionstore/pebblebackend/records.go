package pebblebackend

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// GetRecord returns a copy of a record's value. A record can be read as
// soon as its batch enters Pebble, a moment before that batch is synced;
// callers that must not act on a record before it is durable serialize the
// writer and the readers of one key themselves.
func (b *Backend) GetRecord(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pebblebackend: get record %q: %w", key, err)
	}
	if err := b.enter("get record"); err != nil {
		return nil, err
	}
	defer b.leave()

	v, closer, err := b.db.Get(recordKey(key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("pebblebackend: get record %q: %w", key, backend.ErrRecordNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("pebblebackend: get record %q: %w", key, err)
	}
	data := append([]byte{}, v...)
	if err := closer.Close(); err != nil {
		return nil, fmt.Errorf("pebblebackend: get record %q: %w", key, err)
	}
	return data, nil
}

// ScanRecords returns up to limit records with keys greater than after.
func (b *Backend) ScanRecords(ctx context.Context, after string, limit int) ([]backend.Record, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("pebblebackend: scan records: limit %d must be positive", limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pebblebackend: scan records: %w", err)
	}
	if err := b.enter("scan records"); err != nil {
		return nil, err
	}
	defer b.leave()

	lower := append(recordKey(after), 0) // the smallest key greater than after
	it, err := b.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: []byte{prefixRecord + 1}})
	if err != nil {
		return nil, fmt.Errorf("pebblebackend: scan records: %w", err)
	}
	var out []backend.Record
	for ok := it.First(); ok && len(out) < limit; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, errors.Join(fmt.Errorf("pebblebackend: scan records: %w", err), it.Close())
		}
		out = append(out, backend.Record{Key: string(it.Key()[1:]), Value: append([]byte{}, v...)})
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("pebblebackend: scan records: %w", err)
	}
	return out, nil
}
