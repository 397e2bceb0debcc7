package pgbackend

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/floe-catalog/floe/internal/backoff"
	"github.com/floe-catalog/floe/versionstore/backend"
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

// pause sleeps before the n-th retry (n from 1) of a transaction the
// database aborted: 0.5 to 1 ms at first, doubling up to 64 to 128 ms, so
// that contending transactions fall out of step.
func pause(ctx context.Context, n int) error {
	return backoff.Policy{Base: time.Millisecond, Max: 128 * time.Millisecond}.Wait(ctx, n)
}

// withRetry runs a read until it succeeds, fails for a reason other than a
// serialization failure, or maxAttempts is reached.
func withRetry[T any](ctx context.Context, read func(ctx context.Context) (T, error)) (T, error) {
	for attempt := 1; ; attempt++ {
		v, err := read(ctx)
		if err == nil || !retryable(err) || attempt == maxAttempts {
			return v, unavailable(err)
		}
		if perr := pause(ctx, attempt); perr != nil {
			return v, errors.Join(err, perr)
		}
	}
}

// unavailable marks err with backend.ErrUnavailable when it says the
// database could not be reached or is not accepting work (a refused or
// broken connection, a server shutting down or starting, too many
// connections), so that the APIs answer 503 rather than 500. Other errors
// are returned as they are.
func unavailable(err error) error {
	if err == nil || errors.Is(err, backend.ErrUnavailable) || errors.Is(err, context.Canceled) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code[:2] {
		case "08", "57", "53": // connection exception, operator intervention, insufficient resources
			return fmt.Errorf("%w: %w", backend.ErrUnavailable, err)
		}
		return err
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || pgconn.SafeToRetry(err) || isClosedConn(err) {
		return fmt.Errorf("%w: %w", backend.ErrUnavailable, err)
	}
	return err
}

// isClosedConn reports pgx's errors for a connection it had already
// found broken.
func isClosedConn(err error) bool {
	s := err.Error()
	return strings.Contains(s, "conn closed") || strings.Contains(s, "connection reset") || strings.Contains(s, "broken pipe")
}
