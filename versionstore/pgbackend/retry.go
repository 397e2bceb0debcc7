package pgbackend

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// SQLSTATE codes the backend branches on.
const (
	codeSerializationFailure = "40001" // CockroachDB's "restart transaction", PostgreSQL's SERIALIZABLE
	codeDeadlockDetected     = "40P01"
	codeUniqueViolation      = "23505"
	codeDuplicateTable       = "42P07"
	codeDuplicateObject      = "42710"
)

// maxAttempts bounds how often one statement or transaction is tried when
// the database asks for a retry.
const maxAttempts = 10

// retryable reports whether err asks for the whole transaction to be run
// again: the database aborted it without applying any of it.
func retryable(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return pgErr.Code == codeSerializationFailure || pgErr.Code == codeDeadlockDetected
}

// pause sleeps before the n-th retry (n from 1): random up to 1ms·2^(n-1),
// at most 128ms, so that contending transactions fall out of step.
func pause(ctx context.Context, n int) error {
	d := rand.N(time.Millisecond << min(n-1, 7))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// withRetry runs a read until it succeeds, fails for a reason other than a
// serialization failure, or maxAttempts is reached.
func withRetry[T any](ctx context.Context, read func(ctx context.Context) (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := read(ctx)
		if err == nil || !retryable(err) || attempt == maxAttempts {
			return v, err
		}
		if perr := pause(ctx, attempt); perr != nil {
			return v, errors.Join(err, perr)
		}
	}
}
