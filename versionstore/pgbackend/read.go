package pgbackend

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// GetObject returns the object's bytes.
func (b *Backend) GetObject(ctx context.Context, id backend.ObjectID) ([]byte, error) {
	if err := b.enter("get object"); err != nil {
		return nil, err
	}
	defer b.leave()
	data, err := withRetry(ctx, func(ctx context.Context) ([]byte, error) {
		var data []byte
		err := b.pool.QueryRow(ctx, `SELECT data FROM floe_objects WHERE id = $1`, id[:]).Scan(&data)
		return data, err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("pgbackend: get object %s: %w", id, backend.ErrObjectNotFound)
	case err != nil:
		return nil, fmt.Errorf("pgbackend: get object %s: %w", id, err)
	}
	return nonNil(data), nil
}

var _ backend.ObjectsGetter = (*Backend)(nil)

// GetObjects reads the objects in one query; missing ones are nil.
func (b *Backend) GetObjects(ctx context.Context, ids []backend.ObjectID) ([][]byte, error) {
	if err := b.enter("get objects"); err != nil {
		return nil, err
	}
	defer b.leave()
	keys := make([][]byte, len(ids))
	for i := range ids {
		keys[i] = ids[i][:]
	}
	found, err := withRetry(ctx, func(ctx context.Context) (map[backend.ObjectID][]byte, error) {
		rows, err := b.pool.Query(ctx, `SELECT id, data FROM floe_objects WHERE id = ANY($1)`, keys)
		if err != nil {
			return nil, err
		}
		found := make(map[backend.ObjectID][]byte, len(ids))
		var id, data []byte
		_, err = pgx.ForEachRow(rows, []any{&id, &data}, func() error {
			var oid backend.ObjectID
			if len(id) != len(oid) {
				return fmt.Errorf("object id of %d bytes", len(id))
			}
			copy(oid[:], id)
			found[oid] = append([]byte{}, data...)
			return nil
		})
		return found, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgbackend: get %d objects: %w", len(ids), err)
	}
	out := make([][]byte, len(ids))
	for i, id := range ids {
		out[i] = found[id] // nil if missing; an id asked twice is answered twice
	}
	return out, nil
}

// HasObject reports whether the object exists.
func (b *Backend) HasObject(ctx context.Context, id backend.ObjectID) (bool, error) {
	if err := b.enter("has object"); err != nil {
		return false, err
	}
	defer b.leave()
	has, err := withRetry(ctx, func(ctx context.Context) (bool, error) {
		var has bool
		err := b.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM floe_objects WHERE id = $1)`, id[:]).Scan(&has)
		return has, err
	})
	if err != nil {
		return false, fmt.Errorf("pgbackend: has object %s: %w", id, err)
	}
	return has, nil
}

// ObjectsWithPrefix lists up to limit object ids starting with prefix, in
// ascending order, as a range scan of the primary key: [prefix, the
// prefix's successor), or unbounded above when the prefix is all 0xff.
func (b *Backend) ObjectsWithPrefix(ctx context.Context, prefix []byte, limit int) ([]backend.ObjectID, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("pgbackend: objects with prefix %x: limit %d must be positive", prefix, limit)
	}
	if len(prefix) > len(backend.ObjectID{}) {
		return nil, nil
	}
	if err := b.enter("objects with prefix"); err != nil {
		return nil, err
	}
	defer b.leave()
	lower, upper := nonNil(prefix), prefixEnd(prefix)
	ids, err := withRetry(ctx, func(ctx context.Context) ([]backend.ObjectID, error) {
		rows, err := b.pool.Query(ctx, `SELECT id FROM floe_objects WHERE id >= $1 AND ($2::bytea IS NULL OR id < $2) ORDER BY id LIMIT $3`, lower, upper, limit)
		if err != nil {
			return nil, err
		}
		var ids []backend.ObjectID
		var raw []byte
		_, err = pgx.ForEachRow(rows, []any{&raw}, func() error {
			var id backend.ObjectID
			if len(raw) != len(id) {
				return fmt.Errorf("malformed object id %x", raw)
			}
			copy(id[:], raw)
			ids = append(ids, id)
			return nil
		})
		return ids, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgbackend: objects with prefix %x: %w", prefix, err)
	}
	return ids, nil
}

// prefixEnd returns the smallest byte string greater than every string
// starting with prefix, or nil when there is none (prefix empty or all
// 0xff).
func prefixEnd(prefix []byte) []byte {
	end := append([]byte{}, prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// GetRef returns the reference's current value, read from the database:
// another replica may have moved it a moment ago.
func (b *Backend) GetRef(ctx context.Context, name string) ([]byte, error) {
	if err := b.enter("get ref"); err != nil {
		return nil, err
	}
	defer b.leave()
	v, err := withRetry(ctx, func(ctx context.Context) ([]byte, error) {
		var v []byte
		err := b.pool.QueryRow(ctx, `SELECT value FROM floe_refs WHERE name = $1`, []byte(name)).Scan(&v)
		return v, err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("pgbackend: get ref %q: %w", name, backend.ErrRefNotFound)
	case err != nil:
		return nil, fmt.Errorf("pgbackend: get ref %q: %w", name, err)
	}
	return nonNil(v), nil
}

// ListRefs returns every reference, ordered by name bytewise.
func (b *Backend) ListRefs(ctx context.Context) ([]backend.Ref, error) {
	if err := b.enter("list refs"); err != nil {
		return nil, err
	}
	defer b.leave()
	refs, err := withRetry(ctx, func(ctx context.Context) ([]backend.Ref, error) {
		rows, err := b.pool.Query(ctx, `SELECT name, value FROM floe_refs ORDER BY name`)
		if err != nil {
			return nil, err
		}
		var refs []backend.Ref
		var name, value []byte
		_, err = pgx.ForEachRow(rows, []any{&name, &value}, func() error {
			refs = append(refs, backend.Ref{Name: string(name), Value: append([]byte{}, value...)})
			return nil
		})
		return refs, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgbackend: list refs: %w", err)
	}
	return refs, nil
}

// ReadLog returns up to limit log records with Seq < before, newest first.
func (b *Backend) ReadLog(ctx context.Context, before uint64, limit int) ([]backend.LogRecord, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("pgbackend: read log: limit %d must be positive", limit)
	}
	if err := b.enter("read log"); err != nil {
		return nil, err
	}
	defer b.leave()
	bound := int64(math.MaxInt64)
	if before != 0 && before <= math.MaxInt64 {
		bound = int64(before)
	}
	recs, err := withRetry(ctx, func(ctx context.Context) ([]backend.LogRecord, error) {
		rows, err := b.pool.Query(ctx, `SELECT seq, value FROM floe_log WHERE seq < $1 ORDER BY seq DESC LIMIT $2`, bound, limit)
		if err != nil {
			return nil, err
		}
		return logRecords(rows)
	})
	if err != nil {
		return nil, fmt.Errorf("pgbackend: read log before %d: %w", before, err)
	}
	return recs, nil
}

// ScanLog returns up to limit log records with Seq > after, oldest first
// (backend.LogScanner). Apply numbers records from one counter row held
// until COMMIT, so records become visible in seq order and a scan never
// passes over a record that commits later.
func (b *Backend) ScanLog(ctx context.Context, after uint64, limit int) ([]backend.LogRecord, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("pgbackend: scan log: limit %d must be positive", limit)
	}
	if after >= math.MaxInt64 {
		return nil, nil
	}
	if err := b.enter("scan log"); err != nil {
		return nil, err
	}
	defer b.leave()
	recs, err := withRetry(ctx, func(ctx context.Context) ([]backend.LogRecord, error) {
		rows, err := b.pool.Query(ctx, `SELECT seq, value FROM floe_log WHERE seq > $1 ORDER BY seq LIMIT $2`, int64(after), limit)
		if err != nil {
			return nil, err
		}
		return logRecords(rows)
	})
	if err != nil {
		return nil, fmt.Errorf("pgbackend: scan log after %d: %w", after, err)
	}
	return recs, nil
}

// logRecords reads (seq, value) rows into log records and closes rows.
func logRecords(rows pgx.Rows) ([]backend.LogRecord, error) {
	var recs []backend.LogRecord
	var seq int64
	var value []byte
	_, err := pgx.ForEachRow(rows, []any{&seq, &value}, func() error {
		recs = append(recs, backend.LogRecord{Seq: uint64(seq), Value: append([]byte{}, value...)})
		return nil
	})
	return recs, err
}

// GetRecord returns a record's value.
func (b *Backend) GetRecord(ctx context.Context, key string) ([]byte, error) {
	if err := b.enter("get record"); err != nil {
		return nil, err
	}
	defer b.leave()
	v, err := withRetry(ctx, func(ctx context.Context) ([]byte, error) {
		var v []byte
		err := b.pool.QueryRow(ctx, `SELECT value FROM floe_records WHERE key = $1`, []byte(key)).Scan(&v)
		return v, err
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, fmt.Errorf("pgbackend: get record %q: %w", key, backend.ErrRecordNotFound)
	case err != nil:
		return nil, fmt.Errorf("pgbackend: get record %q: %w", key, err)
	}
	return nonNil(v), nil
}

// ScanRecords returns up to limit records with keys > after, in key order
// (bytewise).
func (b *Backend) ScanRecords(ctx context.Context, after string, limit int) ([]backend.Record, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("pgbackend: scan records: limit %d must be positive", limit)
	}
	if err := b.enter("scan records"); err != nil {
		return nil, err
	}
	defer b.leave()
	recs, err := withRetry(ctx, func(ctx context.Context) ([]backend.Record, error) {
		rows, err := b.pool.Query(ctx, `SELECT key, value FROM floe_records WHERE key > $1 ORDER BY key LIMIT $2`, nonNil([]byte(after)), limit)
		if err != nil {
			return nil, err
		}
		var recs []backend.Record
		var key, value []byte
		_, err = pgx.ForEachRow(rows, []any{&key, &value}, func() error {
			recs = append(recs, backend.Record{Key: string(key), Value: append([]byte{}, value...)})
			return nil
		})
		return recs, err
	})
	if err != nil {
		return nil, fmt.Errorf("pgbackend: scan records after %q: %w", after, err)
	}
	return recs, nil
}

// nonNil returns v, or an empty slice for nil: pgx sends a nil []byte as
// SQL NULL, and an empty value is a value here (a ref or record may hold
// zero bytes).
func nonNil(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}
