package pebblebackend

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// Apply writes the batch atomically and durably. It returns an error wrapping
// backend.ErrRefConflict, and writes nothing, if a reference does not hold its
// expected value. A batch must not name the same reference twice.
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
	if failed := b.failed.Load(); failed != nil {
		return fmt.Errorf("pebblebackend: apply: an earlier write failed, reopen the backend: %w", *failed)
	}

	names, err := refNames(batch.Refs)
	if err != nil {
		return err
	}
	release, err := b.locks.Lock(ctx, names)
	if err != nil {
		return fmt.Errorf("pebblebackend: apply: wait for refs %q: %w", names, err)
	}
	defer release()

	if err := b.compare(batch.Refs); err != nil {
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
	lastSeq, err := b.commit(pb, batch.Log)
	if err != nil {
		return err
	}
	b.publish(batch.Refs, lastSeq)
	return nil
}

// refNames returns the batch's ref names sorted, the order in which their
// locks are taken, and rejects a ref named twice: its two updates could not
// both be checked against the stored value, and the sorted lock order would
// deadlock on it.
func refNames(updates []backend.RefUpdate) ([]string, error) {
	if len(updates) == 0 {
		return nil, nil
	}
	names := make([]string, len(updates))
	for i, u := range updates {
		names[i] = u.Name
	}
	slices.Sort(names)
	for i := 1; i < len(names); i++ {
		if names[i] == names[i-1] {
			return nil, fmt.Errorf("pebblebackend: apply: ref %q updated twice in one batch", names[i])
		}
	}
	return names, nil
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

// commit appends the log records to pb, commits it, and waits until it is
// durable. It returns the seq of the last log record (0 if there are none).
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
func (b *Backend) commit(pb *pebble.Batch, log [][]byte) (uint64, error) {
	b.seqMu.Lock()
	first := b.nextSeq
	for i, v := range log {
		if err := pb.Set(logKey(first+uint64(i)), v, nil); err != nil {
			b.seqMu.Unlock()
			return 0, fmt.Errorf("pebblebackend: apply: build batch: %w", err)
		}
	}
	var err error
	if b.sync {
		err = b.db.ApplyNoSyncWait(pb, pebble.Sync)
	} else {
		err = b.db.Apply(pb, pebble.NoSync)
	}
	if err == nil {
		// Errors returned here precede the WAL write (Pebble treats any
		// later failure as fatal), so on error the seqs were never used.
		b.nextSeq += uint64(len(log))
	}
	b.seqMu.Unlock()
	if err != nil {
		return 0, fmt.Errorf("pebblebackend: apply: commit: %w", err)
	}

	if b.sync {
		if err := pb.SyncWait(); err != nil {
			// The batch is visible in Pebble but may not be durable, and the
			// mirror was not updated: refuse further writes.
			err = fmt.Errorf("pebblebackend: apply: sync WAL: %w", err)
			b.failed.CompareAndSwap(nil, &err)
			return 0, err
		}
	}
	if len(log) == 0 {
		return 0, nil
	}
	return first + uint64(len(log)) - 1, nil
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
