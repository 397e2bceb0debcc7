package pgbackend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/floe-catalog/floe/versionstore/backend"
)

var _ backend.RefLocker = (*Backend)(nil)

// LockRef opens a transaction holding the reference's row (BEGIN and
// SELECT ... FOR UPDATE, in one round trip): other batches moving it, from
// any replica, queue behind it until the LockedRef's Apply commits (one
// more round trip) or Release rolls back. PostgreSQL grants a row's lock in
// the order it was asked for, so a replica waiting for its turn gets it
// instead of losing again to a busier one. A missing reference is not
// locked.
//
// Waiting for the row can end in a deadlock the database breaks by
// aborting this transaction (a cycle through other waiters' locks); it
// held nothing yet, so the lock is asked for again, as Apply retries.
func (b *Backend) LockRef(ctx context.Context, name string) (backend.LockedRef, error) {
	if err := b.enter("lock ref"); err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		l, err := b.lockOnce(ctx, name)
		if err == nil {
			return l, nil // l leaves the backend when applied or released
		}
		if !retryable(err) || attempt == maxAttempts {
			b.leave()
			return nil, fmt.Errorf("pgbackend: lock ref %q: %w", name, unavailable(err))
		}
		b.logger.Debug("ref lock retried", "ref", name, "attempt", attempt, "err", err)
		if perr := pause(ctx, attempt); perr != nil {
			b.leave()
			return nil, fmt.Errorf("pgbackend: lock ref %q: %w", name, errors.Join(err, perr))
		}
	}
}

// lockOnce is one attempt of LockRef; on error the connection is back in
// the pool and no transaction is open.
func (b *Backend) lockOnce(ctx context.Context, name string) (*lockedRef, error) {
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	var q pgx.Batch
	q.Queue("BEGIN")
	q.Queue(`SELECT value, hint FROM floe_refs WHERE name = $1 FOR UPDATE`, []byte(name))
	// Read committed: this statement's snapshot is taken once the row is
	// granted, so it holds every move of the ref up to the locked value.
	q.Queue(`SELECT seq, value FROM floe_log ORDER BY seq DESC LIMIT $1`, recentLogRecords)
	br := conn.SendBatch(ctx, &q)
	_, err = br.Exec()
	var v, hint []byte
	if err == nil {
		err = br.QueryRow().Scan(&v, &hint)
	}
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		v, err = nil, nil
	case err == nil:
		v = nonNil(v)
	}
	var recent []backend.LogRecord
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			recent, err = logRecords(rows)
		}
	}
	if err = errors.Join(err, br.Close()); err != nil {
		end(conn)
		return nil, err
	}
	return &lockedRef{b: b, conn: conn, value: v, hint: hint, recent: recent}, nil
}

// recentLogRecords is how many of the newest log records LockRef reads:
// a few rounds of every replica's commits, so a committer that lost its
// place to them can follow the ref's moves through them.
const recentLogRecords = 256

// lockedRef is a connection in a transaction holding one ref's row. It
// keeps the backend entered (Close waits for it) until Apply or Release.
type lockedRef struct {
	b      *Backend
	conn   *pgxpool.Conn
	value  []byte
	hint   []byte
	recent []backend.LogRecord
	once   sync.Once
}

func (l *lockedRef) Value() []byte { return l.value }

func (l *lockedRef) Hint() []byte { return l.hint }

func (l *lockedRef) RecentLog() []backend.LogRecord { return l.recent }

// Apply writes the batch in the locked transaction. Should the database
// abort it for a serialization failure or deadlock, the batch is applied
// again as Backend.Apply would, by compare-and-swap alone.
func (l *lockedRef) Apply(ctx context.Context, batch backend.Batch) error {
	done := false
	var err error
	l.once.Do(func() {
		done = true
		defer l.b.leave()
		var p *planned
		if p, err = plan(batch); err != nil {
			end(l.conn)
			return
		}
		err = l.b.pipeline(ctx, l.conn, p, false)
		l.conn.Release()
		for attempt := 1; err != nil && retryable(err) && attempt < maxAttempts; attempt++ {
			if perr := pause(ctx, attempt); perr != nil {
				return
			}
			err = l.b.applyOnce(ctx, p)
		}
	})
	if !done {
		return errors.New("pgbackend: apply on a released ref lock")
	}
	return unavailable(err)
}

func (l *lockedRef) Release() {
	l.once.Do(func() {
		end(l.conn)
		l.b.leave()
	})
}

// end rolls back conn's transaction, if any, and returns conn to the pool
// (which drops it if it is broken).
func end(conn *pgxpool.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, _ = conn.Exec(ctx, "ROLLBACK") // on a broken connection the pool drops it anyway
	conn.Release()
}
