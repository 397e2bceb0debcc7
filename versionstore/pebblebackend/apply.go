package pebblebackend

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// Apply writes the batch atomically and durably. It returns an error wrapping
// backend.ErrRefConflict, and writes nothing, if a reference does not hold its
// expected value, and one wrapping a *backend.RecordConflictError if a record
// check fails. A batch must not name the same reference, or check the same
// record, twice.
//
// The context is honoured until the batch is handed to Pebble; after that,
// Apply waits for the outcome, since abandoning it would leave the caller not
// knowing whether the batch was written.
func (b *Backend) Apply(ctx context.Context, batch backend.Batch) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pebblebackend: apply: %w", err)
	}
	if err := b.enter("apply"); err != nil {
		return err
	}
	defer b.leave()
	// A batch the disk cannot take is refused before it reaches Pebble:
	// nothing is written, and the caller may try again later.
	if err := b.Writable(); err != nil {
		return fmt.Errorf("pebblebackend: apply: %w", err)
	}

	names, err := lockNames(batch)
	if err != nil {
		return err
	}
	release, err := b.locks.Lock(ctx, names)
	if err != nil {
		return fmt.Errorf("pebblebackend: apply: wait for locks of refs and records: %w", err)
	}
	defer release()

	if err := b.compare(batch.Refs); err != nil {
		return err
	}
	if err := b.checkRecords(batch.RecordChecks); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("pebblebackend: apply: %w", err)
	}

	pb, err := b.build(batch)
	if err != nil {
		return err
	}
	defer func() { _ = pb.Close() }() // Close only releases memory; it cannot fail after a commit.
	if pb.Empty() && len(batch.Log) == 0 {
		return nil // nothing to change, e.g. only "must not exist" checks
	}
	lastSeq, err := b.commit(pb, batch.Log, !batch.Deferred)
	if err != nil {
		return err
	}
	if batch.Deferred {
		// Its log records become readable with the next synced batch,
		// whose flush makes them durable too.
		lastSeq = 0
	}
	b.publish(batch.Refs, lastSeq)
	return nil
}

// lockNames returns the locks the batch must hold, sorted, the order in
// which they are taken: one per ref it updates and one per record it checks
// or writes, each named by its Pebble key so refs and records cannot
// collide. It rejects a ref updated twice or a record checked twice: the
// two could not both be compared with the stored value, and the sorted lock
// order would deadlock on them. Records written without a check may repeat;
// the last write wins.
//
// Record writes take a lock even without a check: a compare-and-swap in
// another batch must not see its record change between its compare and
// its commit.
func lockNames(batch backend.Batch) ([]string, error) {
	n := len(batch.Refs) + len(batch.RecordChecks) + len(batch.Records) + len(batch.DeleteRecords)
	if n == 0 {
		return nil, nil
	}
	names := make([]string, 0, n)
	for _, u := range batch.Refs {
		names = append(names, string(refKey(u.Name)))
	}
	for _, c := range batch.RecordChecks {
		names = append(names, string(recordKey(c.Key)))
	}
	slices.Sort(names)
	for i := 1; i < len(names); i++ {
		if names[i] == names[i-1] {
			if names[i][0] == prefixRecord {
				return nil, fmt.Errorf("pebblebackend: apply: record %q checked twice in one batch", names[i][1:])
			}
			return nil, fmt.Errorf("pebblebackend: apply: ref %q updated twice in one batch", names[i][1:])
		}
	}
	for _, r := range batch.Records {
		names = append(names, string(recordKey(r.Key)))
	}
	for _, k := range batch.DeleteRecords {
		names = append(names, string(recordKey(k)))
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// checkRecords compares every record check with the stored value. The
// caller holds the locks of these records, so no other batch changes them
// until this one is committed.
func (b *Backend) checkRecords(checks []backend.RecordCheck) error {
	for _, c := range checks {
		if c.Key == "" {
			return fmt.Errorf("pebblebackend: apply: record check with an empty key")
		}
		v, closer, err := b.db.Get(recordKey(c.Key))
		switch {
		case errors.Is(err, pebble.ErrNotFound):
			if c.Expected != nil {
				return fmt.Errorf("pebblebackend: apply: record %q is absent: %w", c.Key, &backend.RecordConflictError{Key: c.Key})
			}
			continue
		case err != nil:
			return fmt.Errorf("pebblebackend: apply: read record %q: %w", c.Key, err)
		}
		match := c.Expected != nil && bytes.Equal(v, c.Expected)
		if err := closer.Close(); err != nil {
			return fmt.Errorf("pebblebackend: apply: read record %q: %w", c.Key, err)
		}
		if !match {
			return fmt.Errorf("pebblebackend: apply: %w", &backend.RecordConflictError{Key: c.Key})
		}
	}
	return nil
}

// compare checks every update's expected value against the mirror. The
// caller holds the locks of all these refs, so the values cannot change
// until the batch is committed and published.
func (b *Backend) compare(updates []backend.RefUpdate) error {
	b.refsMu.RLock()
	defer b.refsMu.RUnlock()
	for _, u := range updates {
		cur, exists := b.refs[u.Name]
		switch {
		case u.Expected == nil && exists:
			return fmt.Errorf("pebblebackend: apply: ref %q exists, expected it absent: %w", u.Name, backend.ErrRefConflict)
		case u.Expected != nil && !exists:
			return fmt.Errorf("pebblebackend: apply: ref %q is absent: %w", u.Name, backend.ErrRefConflict)
		case u.Expected != nil && !bytes.Equal(cur, u.Expected):
			return fmt.Errorf("pebblebackend: apply: ref %q does not hold the expected value: %w", u.Name, backend.ErrRefConflict)
		}
	}
	return nil
}

// build turns the objects and ref updates into a Pebble batch. Log records
// are added by commit, once their seqs are known.
func (b *Backend) build(batch backend.Batch) (*pebble.Batch, error) {
	size := 0
	for _, o := range batch.Objects {
		size += 1 + len(o.ID) + len(o.Data) + 16
	}
	for _, u := range batch.Refs {
		size += 1 + len(u.Name) + len(u.New) + 16
	}
	for _, v := range batch.Log {
		size += 9 + len(v) + 16
	}
	for _, r := range batch.Records {
		size += 1 + len(r.Key) + len(r.Value) + 16
	}
	pb := b.db.NewBatchWithSize(size)
	fail := func(err error) (*pebble.Batch, error) {
		_ = pb.Close()
		return nil, fmt.Errorf("pebblebackend: apply: build batch: %w", err)
	}
	// Objects are content-addressed, so writing one that already exists
	// rewrites identical bytes: harmless, and cheaper than a read per object.
	var key [1 + len(backend.ObjectID{})]byte
	key[0] = prefixObject
	for _, o := range batch.Objects {
		copy(key[1:], o.ID[:])
		// Set copies the key into the batch, so one buffer serves all.
		if err := pb.Set(key[:], o.Data, nil); err != nil {
			return fail(err)
		}
	}
	for _, u := range batch.Refs {
		switch {
		case u.New != nil:
			if err := pb.Set(refKey(u.Name), u.New, nil); err != nil {
				return fail(err)
			}
		case u.Expected != nil:
			if err := pb.Delete(refKey(u.Name), nil); err != nil {
				return fail(err)
			}
		}
		// Expected nil and New nil only asserts absence: nothing to write.
	}
	for _, r := range batch.Records {
		if r.Key == "" {
			return fail(fmt.Errorf("record with an empty key"))
		}
		if err := pb.Set(recordKey(r.Key), r.Value, nil); err != nil {
			return fail(err)
		}
	}
	for _, k := range batch.DeleteRecords {
		if err := pb.Delete(recordKey(k), nil); err != nil {
			return fail(err)
		}
	}
	return pb, nil
}

// commit appends the log records to pb, commits it, and, if sync is set
// (and the backend syncs at all), waits until it is durable. It returns the
// seq of the last log record (0 if there are none). A batch committed
// without sync is in the WAL before every batch committed after it, so
// their fsync covers it.
//
// Seqs must rise in the order records become visible and durable: ReadLog
// pages backwards by seq, so a reader must never see seq n+1 and only later
// see n appear, and a crash must never keep n+1 but lose n. Pebble's commit
// pipeline writes batches to the WAL, applies them and makes them visible in
// one order, and an fsync makes a prefix of that WAL order durable. So it
// suffices that seqs are assigned in pipeline order. We assign them and enter
// the pipeline under seqMu using ApplyNoSyncWait, which returns once the
// batch is in the WAL and visible but before the fsync, and release seqMu
// before SyncWait. Concurrent Apply calls on different refs therefore queue
// behind one fsync (Pebble's group commit) instead of one fsync each.
// Alternatives are worse: holding seqMu across a synced Apply serializes every
// fsync; assigning seqs under seqMu and committing outside it lets seq n+1
// reach the WAL before n.
//
// ApplyNoSyncWait is marked experimental in Pebble; it is pinned at v2.1.7
// and its contract (visible on return, SyncWait before Close) is what this
// relies on.
func (b *Backend) commit(pb *pebble.Batch, log [][]byte, sync bool) (uint64, error) {
	b.seqMu.Lock()
	first := b.nextSeq
	for i, v := range log {
		if err := pb.Set(logKey(first+uint64(i)), v, nil); err != nil {
			b.seqMu.Unlock()
			return 0, fmt.Errorf("pebblebackend: apply: build batch: %w", err)
		}
	}
	// Pebble's log writer keeps a failed write's error, and the next
	// commit to meet it panics: enter only while the WAL has not failed.
	if werr := b.guard.walFailure(); werr != nil {
		b.seqMu.Unlock()
		err := fmt.Errorf("write-ahead log: %w", werr)
		b.fail(err)
		return 0, fmt.Errorf("pebblebackend: apply: %w: %w", backend.ErrUnavailable, err)
	}
	sync = sync && b.sync
	err := b.enterPebble(pb, sync)
	if err == nil {
		// Errors returned here precede the WAL write (Pebble treats any
		// later failure as fatal), so on error the seqs were never used.
		b.nextSeq += uint64(len(log))
	}
	b.seqMu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("pebblebackend: apply: commit: %w", err)
	}

	if sync {
		if err := pb.SyncWait(); err != nil {
			// The batch is visible in Pebble but may not be durable, and the
			// mirror was not updated: refuse further writes until the
			// database is reopened, which reads back what reached the disk.
			// Whether this batch did is unknown.
			err = fmt.Errorf("sync WAL: %w", err)
			b.fail(err)
			return 0, fmt.Errorf("pebblebackend: apply: %w: %w", backend.ErrOutcomeUnknown, err)
		}
	}
	if len(log) == 0 {
		return 0, nil
	}
	return first + uint64(len(log)) - 1, nil
}

// enterPebble hands pb to Pebble's commit pipeline. A panic there (a log
// writer error met by this commit) leaves the pipeline's lock held for
// good: the batch is reported as not written (Pebble panics before it
// reaches the WAL) and the backend as wedged, to be restarted.
func (b *Backend) enterPebble(pb *pebble.Batch, sync bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: Pebble failed inside a commit: %v", backend.ErrUnavailable, r)
			b.wedged.CompareAndSwap(nil, &err)
			b.logger.Error("the store cannot take writes until floe is restarted", "cause", err.Error())
		}
	}()
	if sync {
		return b.db.ApplyNoSyncWait(pb, pebble.Sync)
	}
	return b.db.Apply(pb, pebble.NoSync)
}

// publish makes a durable batch's effects visible through GetRef, ListRefs
// and ReadLog. The caller still holds the refs' locks.
func (b *Backend) publish(updates []backend.RefUpdate, lastSeq uint64) {
	// Fsyncs of concurrent batches can return in any order, but a synced
	// batch implies every earlier WAL record is synced, so the watermark is
	// simply the largest seq seen.
	for {
		cur := b.durableSeq.Load()
		if lastSeq <= cur || b.durableSeq.CompareAndSwap(cur, lastSeq) {
			break
		}
	}
	if len(updates) == 0 {
		return
	}
	b.refsMu.Lock()
	defer b.refsMu.Unlock()
	for _, u := range updates {
		switch {
		case u.New != nil:
			b.refs[u.Name] = append([]byte{}, u.New...)
		default:
			delete(b.refs, u.Name)
		}
	}
}
