package pebblebackend

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// ReadLog returns up to limit durable log records with Seq < before, newest
// first; before == 0 means from the newest. Records whose batch is still
// waiting for its fsync are not shown. limit must be positive.
func (b *Backend) ReadLog(ctx context.Context, before uint64, limit int) ([]backend.LogRecord, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("pebblebackend: read log before %d: limit %d must be positive", before, limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pebblebackend: read log before %d: %w", before, err)
	}
	if err := b.enter("read log"); err != nil {
		return nil, err
	}
	defer b.leave()

	// Exclusive upper bound: the smaller of before and durableSeq+1.
	upper := b.durableSeq.Load() + 1
	if before != 0 && before < upper {
		upper = before
	}
	it, err := b.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{prefixLog},
		UpperBound: logKey(upper),
	})
	if err != nil {
		return nil, fmt.Errorf("pebblebackend: read log before %d: %w", before, err)
	}
	recs, err := collectLog(it, false, limit)
	if err != nil {
		return nil, fmt.Errorf("pebblebackend: read log before %d: %w", before, err)
	}
	return recs, nil
}

// ScanLog returns up to limit durable log records with Seq > after, oldest
// first (backend.LogScanner). Like ReadLog it stops at the durable
// watermark: a record whose batch still waits for its fsync is not shown,
// and since seqs are assigned in the commit pipeline's order, neither is
// any record after it.
func (b *Backend) ScanLog(ctx context.Context, after uint64, limit int) ([]backend.LogRecord, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("pebblebackend: scan log after %d: limit %d must be positive", after, limit)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("pebblebackend: scan log after %d: %w", after, err)
	}
	if err := b.enter("scan log"); err != nil {
		return nil, err
	}
	defer b.leave()

	durable := b.durableSeq.Load()
	if after >= durable {
		return nil, nil
	}
	it, err := b.db.NewIter(&pebble.IterOptions{
		LowerBound: logKey(after + 1),
		UpperBound: logKey(durable + 1),
	})
	if err != nil {
		return nil, fmt.Errorf("pebblebackend: scan log after %d: %w", after, err)
	}
	recs, err := collectLog(it, true, limit)
	if err != nil {
		return nil, fmt.Errorf("pebblebackend: scan log after %d: %w", after, err)
	}
	return recs, nil
}

// collectLog reads up to limit log records from it, oldest first when
// forward, newest first otherwise, and closes it. Values are copied: the
// iterator's are valid only until it moves.
func collectLog(it *pebble.Iterator, forward bool, limit int) ([]backend.LogRecord, error) {
	first, next := it.Last, it.Prev
	if forward {
		first, next = it.First, it.Next
	}
	var recs []backend.LogRecord
	var err error
	for ok := first(); ok && len(recs) < limit; ok = next() {
		var seq uint64
		if seq, err = decodeLogKey(it.Key()); err != nil {
			break
		}
		var v []byte
		if v, err = it.ValueAndErr(); err != nil {
			break
		}
		recs = append(recs, backend.LogRecord{Seq: seq, Value: append([]byte{}, v...)})
	}
	if err := errors.Join(err, it.Error(), it.Close()); err != nil {
		return nil, err
	}
	return recs, nil
}
