package pebblebackend

import (
	"errors"
	"fmt"
	"time"
)

// Backoff of the reopen loop between attempts.
const (
	reopenRetryMin = 100 * time.Millisecond
	reopenRetryMax = 5 * time.Second
)

// fail marks the backend failed after a write the WAL could not take
// (err says why) and starts the reopen loop. Writes are refused with
// backend.ErrUnavailable until the loop has reopened the database.
func (b *Backend) fail(err error) {
	if !b.failed.CompareAndSwap(nil, &err) {
		return
	}
	b.logger.Error("a write could not be made durable; writes are refused until the store is reopened", "cause", err.Error())
	if b.reopening.CompareAndSwap(false, true) {
		go b.reopenLoop()
	}
}

// reopenLoop reopens the database once the disk takes writes again, with
// backoff, until it succeeds or the backend is closed.
//
// A database whose WAL failed cannot be repaired in place: Pebble's log
// writer keeps the error, and the batches after the failure may or may not
// be in the file. Reopening replays the WAL as a restart would, so the
// backend afterwards holds exactly what reached the disk: every batch
// whose Apply returned nil (each was synced before it returned), the
// failed batch if its bytes made it, and nothing half-written, since a
// torn WAL record is dropped by the replay.
func (b *Backend) reopenLoop() {
	defer b.reopening.Store(false)
	wait := reopenRetryMin
	var last string
	for {
		t := time.NewTimer(wait)
		select {
		case <-b.closing:
			t.Stop()
			return
		case <-t.C:
		}
		err := b.reopen()
		if err == nil {
			return
		}
		// One line per distinct cause, not one per attempt.
		if msg := err.Error(); msg != last {
			b.logger.Warn("the store could not be reopened yet; trying again", "cause", msg)
			last = msg
		}
		wait = min(2*wait, reopenRetryMax)
	}
}

// reopen closes the database and opens it again, if the disk takes a
// probe write. Calls wait for it (it holds life exclusively), so no call
// meets a closed database.
func (b *Backend) reopen() error {
	if err := b.guard.refusing(); err != nil {
		return err
	}
	if err := probeWrite(b.fs, b.fs.PathJoin(b.dir, probeName)); err != nil {
		return fmt.Errorf("probe write in %s: %w", b.dir, err)
	}
	b.life.Lock()
	defer b.life.Unlock()
	if b.closed {
		return nil
	}
	if b.db != nil {
		// Close reports the WAL's failure again; the database is closed
		// all the same.
		if err := b.db.Close(); err != nil {
			b.logger.Debug("closing the store after its failed write", "error", err.Error())
		}
		b.db = nil
	}
	b.guard.resetWAL()
	db, err := b.openDB()
	if err != nil {
		return fmt.Errorf("open %s: %w", b.dir, err)
	}
	// The replay may have brought back batches whose sync failed: they
	// were read from the old WAL and maybe only from the page cache.
	// Flushing writes them to a synced table before the mirror shows them.
	if err := db.Flush(); err != nil {
		return errors.Join(fmt.Errorf("flush %s after reopening: %w", b.dir, err), db.Close())
	}
	b.db = db
	b.refsMu.Lock()
	clear(b.refs)
	b.refsMu.Unlock()
	if err := b.load(); err != nil {
		b.db = nil
		return errors.Join(fmt.Errorf("load %s after reopening: %w", b.dir, err), db.Close())
	}
	b.failed.Store(nil)
	b.reopens.Add(1)
	b.logger.Info("the store was reopened and takes writes again", "data_dir", b.dir)
	return nil
}
