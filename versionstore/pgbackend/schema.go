package pgbackend

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// ErrSchemaTooNew reports a database migrated by a newer floe: this build
// does not know its layout and must not write to it.
var ErrSchemaTooNew = errors.New("database schema is newer than this build")

// migrations are the schema's versions, in order: migrations[i] takes the
// schema from version i to i+1. A released migration is never edited; a
// change of layout is a new entry. Each runs in one transaction together
// with the row recording its version, so a crash leaves either the old
// schema or the new one.
//
// Names are bytea, not text, so that ORDER BY and range scans compare bytes,
// as the backend interface orders refs and records, whatever the
// database's collation.
var migrations = []string{
	// 1: the initial layout.
	`CREATE TABLE floe_objects (
		id   bytea PRIMARY KEY,
		data bytea NOT NULL
	);
	CREATE TABLE floe_refs (
		name  bytea PRIMARY KEY,
		value bytea NOT NULL
	);
	CREATE TABLE floe_log (
		seq   bigint PRIMARY KEY,
		value bytea NOT NULL
	);
	CREATE TABLE floe_log_seq (
		id   int PRIMARY KEY,
		last bigint NOT NULL
	);
	INSERT INTO floe_log_seq (id, last) VALUES (1, 0);
	CREATE TABLE floe_records (
		key   bytea PRIMARY KEY,
		value bytea NOT NULL
	)`,
	// 2: a ref's hint (backend.RefUpdate.Hint), returned by LockRef.
	`ALTER TABLE floe_refs ADD COLUMN hint bytea`,
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int { return len(migrations) }

// migrate brings the schema up to SchemaVersion. Several replicas may start
// at once: each migration inserts its version row first, in the same
// transaction as its DDL, so a second replica trying the same step blocks
// on that row's primary key until the first commits, then fails with a
// unique violation and simply reads the version again. No advisory lock is
// needed (CockroachDB has none).
func (b *Backend) migrate(ctx context.Context) error {
	if err := b.createVersionTable(ctx); err != nil {
		return err
	}
	for {
		var cur int
		err := b.pool.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM floe_schema_version`).Scan(&cur)
		if err != nil {
			return fmt.Errorf("read schema version: %w", err)
		}
		switch {
		case cur > len(migrations):
			return fmt.Errorf("schema version %d, this build knows up to %d: %w", cur, len(migrations), ErrSchemaTooNew)
		case cur == len(migrations):
			return nil
		}
		err = pgx.BeginFunc(ctx, b.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO floe_schema_version (version) VALUES ($1)`, cur+1); err != nil {
				return err
			}
			// Simple protocol: a migration may hold several statements.
			_, err := tx.Exec(ctx, migrations[cur], pgx.QueryExecModeSimpleProtocol)
			return err
		})
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && (pgErr.Code == codeUniqueViolation || retryable(err)):
			continue // another replica applied it, or we collided: look again
		case err != nil:
			return fmt.Errorf("migrate schema to version %d: %w", cur+1, err)
		}
		b.logger.Info("schema migrated", "db", b.name, "version", cur+1)
	}
}

// createVersionTable creates the table of applied versions if it is
// missing. Two replicas creating it at once can collide in the catalog
// (PostgreSQL reports a unique violation on pg_type, or that the table or
// its row type already exists),
// which only means the other one won.
func (b *Backend) createVersionTable(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		_, err := b.pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS floe_schema_version (
			version    int PRIMARY KEY,
			applied_at timestamptz NOT NULL DEFAULT now()
		)`)
		var pgErr *pgconn.PgError
		if err == nil || (errors.As(err, &pgErr) && (pgErr.Code == codeUniqueViolation || pgErr.Code == codeDuplicateTable || pgErr.Code == codeDuplicateObject) && attempt < 3) {
			if err == nil {
				return nil
			}
			continue
		}
		return fmt.Errorf("create schema version table: %w", err)
	}
}
