package pgbackend

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-catalog/floe/versionstore/backend"
)

var _ backend.RefLocker = (*Backend)(nil)

// LockRef opens a transaction holding the reference's row (SELECT ... FOR
// UPDATE): other batches moving it, from any replica, queue behind it until
// the LockedRef's Apply commits or Release rolls back. PostgreSQL grants
// row locks in the order they were asked for, so a replica that lost a
// compare-and-swap gets its turn instead of losing again to a busier one.
// A missing reference is not locked.
func (b *Backend) LockRef(ctx context.Context, name string) (backend.LockedRef, error) {
	if err := b.enter("lock ref"); err != nil {
		return nil, err
	}
	tx, err := b.pool.BeginTx(ctx, pgx.TxOptions{})
	if err != nil {
		b.leave()
		return nil, fmt.Errorf("pgbackend: lock ref %q: begin: %w", name, unavailable(err))
	}
	var v []byte
	err = tx.QueryRow(ctx, `SELECT value FROM floe_refs WHERE name = $1 FOR UPDATE`, []byte(name)).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		v = nil
	case err != nil:
		rollback(ctx, tx)
		b.leave()
		return nil, fmt.Errorf("pgbackend: lock ref %q: %w", name, unavailable(err))
	default:
		v = nonNil(v)
	}
	return &lockedRef{b: b, tx: tx, value: v}, nil
}

// lockedRef is a transaction holding one ref's row. It keeps the backend
// entered (Close waits for it) until Apply or Release.
type lockedRef struct {
	b     *Backend
	tx    pgx.Tx
	value []byte
	once  sync.Once
}

func (l *lockedRef) Value() []byte { return l.value }

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
			rollback(ctx, l.tx)
			return
		}
		err = l.b.applyTx(ctx, l.tx, p)
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
		rollback(context.Background(), l.tx)
		l.b.leave()
	})
}

func rollback(ctx context.Context, tx pgx.Tx) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = tx.Rollback(rctx) // only releases the connection; its error adds nothing
}
