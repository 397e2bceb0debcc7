package pgbackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// ErrOutcomeUnknown reports a batch whose COMMIT was sent but whose answer
// was lost (the connection broke, or the database went away), and whose
// outcome could not be found out afterwards by reading its references back.
// It is backend.ErrOutcomeUnknown, and wraps backend.ErrUnavailable too.
var ErrOutcomeUnknown = backend.ErrOutcomeUnknown

// commitTimeout bounds the COMMIT of a batch, which no longer follows the
// caller's context: abandoning it half way would leave the caller not
// knowing whether the batch was written.
const commitTimeout = 30 * time.Second

// Apply writes the batch in one transaction, atomically and durably (the
// COMMIT returns once the database has flushed its WAL, under
// synchronous_commit=on). It returns an error wrapping
// backend.ErrRefConflict, and writes nothing, if a reference does not hold
// its expected value, and one wrapping a *backend.RecordConflictError if a
// record check fails. Serialization failures and deadlocks are retried.
//
// Row locks are taken in one order by every batch, and by LockRef's
// transactions (refs by name, objects by id, checked records by key, then
// record writes, then the log counter row), which keeps batches from
// deadlocking one another in the common cases; the rare remaining cycle is
// broken by the database and retried.
func (b *Backend) Apply(ctx context.Context, batch backend.Batch) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pgbackend: apply: %w", err)
	}
	if err := b.enter("apply"); err != nil {
		return err
	}
	defer b.leave()
	p, err := plan(batch)
	if err != nil {
		return err
	}
	if p.empty() {
		return nil
	}
	for attempt := 1; ; attempt++ {
		err := b.applyOnce(ctx, p)
		if err == nil || !retryable(err) || attempt == maxAttempts {
			return unavailable(err)
		}
		b.logger.Debug("batch retried", "refs", describe(batch), "attempt", attempt, "err", err)
		if perr := pause(ctx, attempt); perr != nil {
			return fmt.Errorf("pgbackend: apply: %w", errors.Join(err, perr))
		}
	}
}

// planned is a batch validated and put in lock order.
type planned struct {
	refs         []backend.RefUpdate
	checks       []backend.RecordCheck
	insertChecks map[string][]byte // checked absent and written: insert if absent
	writeKeys    [][]byte
	writeValues  [][]byte
	deleteKeys   [][]byte
	objectIDs    [][]byte
	objectData   [][]byte
	log          [][]byte
}

func (p *planned) empty() bool {
	return len(p.refs) == 0 && len(p.checks) == 0 && len(p.writeKeys) == 0 &&
		len(p.deleteKeys) == 0 && len(p.objectIDs) == 0 && len(p.log) == 0
}

// plan validates the batch and sorts what it locks.
func plan(batch backend.Batch) (*planned, error) {
	p := &planned{}
	p.refs = slices.Clone(batch.Refs)
	slices.SortFunc(p.refs, func(x, y backend.RefUpdate) int { return strings.Compare(x.Name, y.Name) })
	for i := 1; i < len(p.refs); i++ {
		if p.refs[i].Name == p.refs[i-1].Name {
			return nil, fmt.Errorf("pgbackend: apply: ref %q updated twice in one batch", p.refs[i].Name)
		}
	}
	p.checks = slices.Clone(batch.RecordChecks)
	slices.SortFunc(p.checks, func(x, y backend.RecordCheck) int { return strings.Compare(x.Key, y.Key) })
	for i, c := range p.checks {
		if c.Key == "" {
			return nil, fmt.Errorf("pgbackend: apply: record check with an empty key")
		}
		if i > 0 && c.Key == p.checks[i-1].Key {
			return nil, fmt.Errorf("pgbackend: apply: record %q checked twice in one batch", c.Key)
		}
	}

	// The final state of each written record: the last write wins, and a
	// delete wins over a write in the same batch (as Pebble applies sets
	// before deletes).
	final := map[string][]byte{}
	for _, r := range batch.Records {
		if r.Key == "" {
			return nil, fmt.Errorf("pgbackend: apply: record with an empty key")
		}
		final[r.Key] = nonNil(r.Value)
	}
	deleted := map[string]bool{}
	for _, k := range batch.DeleteRecords {
		delete(final, k)
		deleted[k] = true
	}
	checkedAbsent := map[string]bool{}
	for _, c := range p.checks {
		if c.Expected != nil {
			continue
		}
		checkedAbsent[c.Key] = true
		if v, ok := final[c.Key]; ok {
			if p.insertChecks == nil {
				p.insertChecks = map[string][]byte{}
			}
			p.insertChecks[c.Key] = v
		}
	}
	for _, k := range slices.Sorted(maps.Keys(final)) {
		p.writeKeys = append(p.writeKeys, []byte(k))
		p.writeValues = append(p.writeValues, final[k])
	}
	for _, k := range slices.Sorted(maps.Keys(deleted)) {
		// A record checked absent was absent when checked; deleting it
		// here could only remove a record another batch created after
		// the check, which a serial order puts after this batch.
		if !checkedAbsent[k] {
			p.deleteKeys = append(p.deleteKeys, []byte(k))
		}
	}

	objs := slices.Clone(batch.Objects)
	slices.SortFunc(objs, func(x, y backend.Object) int { return bytes.Compare(x.ID[:], y.ID[:]) })
	objs = slices.CompactFunc(objs, func(x, y backend.Object) bool { return x.ID == y.ID })
	for _, o := range objs {
		p.objectIDs = append(p.objectIDs, o.ID[:])
		p.objectData = append(p.objectData, nonNil(o.Data))
	}
	for _, v := range batch.Log {
		p.log = append(p.log, nonNil(v))
	}
	return p, nil
}

// stmt is one statement of a batch's transaction. A statement that checks
// a compare-and-swap fails with division_by_zero when the compare does not
// hold (SELECT 1/count(*) over the rows it changed or matched), so that the
// whole transaction, BEGIN to COMMIT, can be sent in one round trip and
// aborts by itself: conflict then names the error to report.
type stmt struct {
	sql      string
	args     []any
	conflict func() error
}

// statements lists the batch's statements in lock order.
func (p *planned) statements() []stmt {
	var out []stmt
	add := func(conflict func() error, sql string, args ...any) {
		out = append(out, stmt{sql: sql, args: args, conflict: conflict})
	}
	// Refs first, because a LockedRef's transaction holds its ref's row
	// before it knows its batch: taking objects first here would let a
	// batch hold an uncommitted object (replicas building on one head
	// write identical objects) while it waits for the ref row whose holder
	// inserts that same object, a cycle PostgreSQL breaks by aborting one
	// of them. The ref row is then held through the object insert as well
	// as the compare-and-swap, the log append and COMMIT; the COMMIT's WAL
	// flush is most of that time.
	for _, u := range p.refs {
		name := []byte(u.Name)
		exists := func() error {
			return fmt.Errorf("pgbackend: apply: ref %q exists, expected it absent: %w", u.Name, backend.ErrRefConflict)
		}
		differs := func() error {
			return fmt.Errorf("pgbackend: apply: ref %q does not hold the expected value: %w", u.Name, backend.ErrRefConflict)
		}
		switch {
		case u.Expected == nil && u.New != nil:
			add(exists, `WITH i AS (INSERT INTO floe_refs (name, value, hint) VALUES ($1, $2, $3) ON CONFLICT (name) DO NOTHING RETURNING 1)
				SELECT 1/count(*) FROM i`, name, nonNil(u.New), u.Hint)
		case u.Expected == nil:
			add(exists, `SELECT 1/(1 - count(*)) FROM floe_refs WHERE name = $1`, name)
		case u.New != nil:
			// Under READ COMMITTED a concurrent update of the row makes
			// this wait, then re-check the WHERE clause against the new
			// row version: the compare-and-swap is decided by the row lock.
			add(differs, `WITH u AS (UPDATE floe_refs SET value = $3, hint = $4 WHERE name = $1 AND value = $2 RETURNING 1)
				SELECT 1/count(*) FROM u`, name, u.Expected, nonNil(u.New), u.Hint)
		default:
			add(differs, `WITH d AS (DELETE FROM floe_refs WHERE name = $1 AND value = $2 RETURNING 1)
				SELECT 1/count(*) FROM d`, name, u.Expected)
		}
	}
	if len(p.objectIDs) > 0 {
		add(nil, `INSERT INTO floe_objects (id, data) SELECT * FROM unnest($1::bytea[], $2::bytea[])
			ON CONFLICT (id) DO NOTHING`, p.objectIDs, p.objectData)
	}
	for _, c := range p.checks {
		key := []byte(c.Key)
		conflict := func() error {
			return fmt.Errorf("pgbackend: apply: %w", &backend.RecordConflictError{Key: c.Key})
		}
		switch v, insert := p.insertChecks[c.Key]; {
		case c.Expected != nil:
			add(conflict, `SELECT 1/count(*) FROM (SELECT 1 FROM floe_records WHERE key = $1 AND value = $2 FOR UPDATE) r`, key, c.Expected)
		case insert:
			// Absent, then written: the insert is the check, and its
			// uncommitted row makes a concurrent creator wait for us.
			add(conflict, `WITH i AS (INSERT INTO floe_records (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING 1)
				SELECT 1/count(*) FROM i`, key, v)
		default:
			add(conflict, `SELECT 1/(1 - count(*)) FROM floe_records WHERE key = $1`, key)
		}
	}
	if len(p.writeKeys) > 0 {
		add(nil, `INSERT INTO floe_records (key, value) SELECT * FROM unnest($1::bytea[], $2::bytea[])
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`, p.writeKeys, p.writeValues)
	}
	if len(p.deleteKeys) > 0 {
		add(nil, `DELETE FROM floe_records WHERE key = ANY($1::bytea[])`, p.deleteKeys)
	}
	if len(p.log) > 0 {
		// Seqs come from one counter row, taken last and held to COMMIT:
		// log appends are thereby serialized in commit order, so seqs rise
		// in the order records become visible and a reader paging back
		// never sees n+1 before n (a sequence would hand out numbers in
		// nextval order, not commit order).
		add(nil, `WITH s AS (UPDATE floe_log_seq SET last = last + $1 WHERE id = 1 RETURNING last)
			INSERT INTO floe_log (seq, value)
			SELECT s.last - $1 + v.ord, v.value FROM s, unnest($2::bytea[]) WITH ORDINALITY AS v(value, ord)`,
			int64(len(p.log)), p.log)
	}
	return out
}

// codeDivisionByZero is how a compare-and-swap statement reports that its
// compare failed; see stmt.
const codeDivisionByZero = "22012"

// results reads the results of stmts from br in order, returning the first
// failure: the conflict of a compare that did not hold, or the error.
func results(br pgx.BatchResults, stmts []stmt) error {
	for _, st := range stmts {
		if _, err := br.Exec(); err != nil {
			var pgErr *pgconn.PgError
			if st.conflict != nil && errors.As(err, &pgErr) && pgErr.Code == codeDivisionByZero {
				return st.conflict()
			}
			return fmt.Errorf("pgbackend: apply: %w", err)
		}
	}
	return nil
}

// applyOnce runs the batch as one transaction sent in one round trip:
// BEGIN, every statement, COMMIT, pipelined. A compare that does not hold
// aborts the transaction (see stmt), and the COMMIT then is not run.
//
// The caller's context is honoured until the pipeline is sent; the round
// trip itself follows a detached one, since abandoning it half way would
// leave the caller not knowing whether the batch was written.
func (b *Backend) applyOnce(ctx context.Context, p *planned) error {
	conn, err := b.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgbackend: apply: %w", err)
	}
	defer conn.Release()
	return b.pipeline(ctx, conn, p, true)
}

// pipeline sends the batch's statements and COMMIT on conn in one round
// trip, preceded by BEGIN when begin is set (otherwise conn is already in
// a transaction: LockRef's), and reads the outcome.
func (b *Backend) pipeline(ctx context.Context, conn *pgxpool.Conn, p *planned, begin bool) error {
	stmts := p.statements()
	var q pgx.Batch
	if begin {
		q.Queue("BEGIN")
	}
	for _, st := range stmts {
		q.Queue(st.sql, st.args...)
	}
	q.Queue("COMMIT")

	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	br := conn.SendBatch(cctx, &q)
	var err error
	if begin {
		_, err = br.Exec()
	}
	if err == nil {
		err = results(br, stmts)
	}
	var commitErr error
	if err == nil {
		var tag pgconn.CommandTag
		tag, commitErr = br.Exec()
		if commitErr == nil && tag.String() != "COMMIT" {
			commitErr = fmt.Errorf("COMMIT answered %q", tag.String())
		}
	}
	closeErr := br.Close()
	if err != nil || commitErr != nil {
		// A failed statement leaves the transaction open and aborted: end
		// it before the connection goes back to the pool. On a broken
		// connection this fails too, and the pool drops the connection.
		_, _ = conn.Exec(cctx, "ROLLBACK")
	}
	switch {
	case err != nil:
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) || errors.Is(err, backend.ErrRefConflict) || errors.Is(err, backend.ErrRecordConflict) {
			return err // the database answered: nothing was written
		}
		if errors.Is(err, context.DeadlineExceeded) || conn.Conn().IsClosed() {
			// Lost before COMMIT was answered: it may still have run.
			return b.resolveOutcome(p, err)
		}
		return err
	case commitErr != nil:
		var pgErr *pgconn.PgError
		if errors.As(commitErr, &pgErr) {
			return fmt.Errorf("pgbackend: apply: commit: %w", commitErr)
		}
		return b.resolveOutcome(p, commitErr)
	case closeErr != nil:
		return b.resolveOutcome(p, closeErr)
	}
	return nil
}

// resolveOutcome finds out whether a batch whose COMMIT got no answer was
// written, by reading its first reference back once the database answers
// again: the new value (an encoded ref naming a fresh commit) can only be
// there if this batch put it there. A batch without references cannot be
// told apart and reports ErrOutcomeUnknown.
func (b *Backend) resolveOutcome(p *planned, commitErr error) error {
	unknown := fmt.Errorf("pgbackend: apply: commit: %w: %w", ErrOutcomeUnknown, commitErr)
	if len(p.refs) == 0 {
		return unknown
	}
	u := p.refs[0]
	ctx, cancel := context.WithTimeout(context.Background(), commitTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		// Give a commit the server was still finishing time to land.
		if err := pause(ctx, min(attempt+6, 10)); err != nil {
			return unknown
		}
		var v []byte
		err := b.pool.QueryRow(ctx, `SELECT value FROM floe_refs WHERE name = $1`, []byte(u.Name)).Scan(&v)
		notWritten := fmt.Errorf("pgbackend: apply: the commit was not written: %w", commitErr)
		switch {
		case errors.Is(err, pgx.ErrNoRows) && u.New == nil:
			return nil // absent, as this batch leaves it
		case errors.Is(err, pgx.ErrNoRows) && u.Expected == nil:
			return notWritten
		case errors.Is(err, pgx.ErrNoRows):
			return unknown // deleted by someone since, after us or instead of us
		case err != nil:
			continue // the database is not back yet
		case u.New != nil && bytes.Equal(v, u.New):
			// Ref values name fresh commits, so only this batch can
			// have put this one there.
			b.logger.Info("commit confirmed after its answer was lost", "ref", u.Name)
			return nil
		case u.Expected != nil && bytes.Equal(v, u.Expected):
			return notWritten
		default:
			return unknown // moved on since: by us first, or instead of us
		}
	}
}
