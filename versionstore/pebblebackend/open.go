package pebblebackend

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// FormatMajorVersion is the Pebble on-disk format this build writes. Pebble
// ratchets a database up to the version it is opened with and never back, so
// opening with pebble.FormatNewest would let a routine dependency bump
// upgrade every user's store on its next start, silently and irreversibly
// (an older floe could then no longer open it). Pinning the version makes an
// upgrade a decision: raise this constant in its own change, say so in the
// release notes, and keep the test that opens a store written at the old
// version. It is what FormatNewest resolved to with Pebble v2.1.7, so stores
// created before the pin open unchanged.
const FormatMajorVersion = pebble.FormatValueSeparation

// ErrUnknownFormat reports a database this build cannot read: its format
// marker is missing or names a different key layout.
var ErrUnknownFormat = errors.New("unknown storage format")

// Open opens the database in dir, creating it if it does not exist. A new
// database is stamped with the current format marker; an existing one must
// carry it, or Open fails with an error wrapping ErrUnknownFormat.
//
// Open fails at once, with the cause in its error, if the disk cannot take
// the store's writes: less than minFreeBytes free, or a directory where a
// file cannot be written and synced. Starting anyway would bring up a
// server whose first flush hangs or fails (issue 32); coming up read-only
// instead would keep reads going, but hide the fault behind a server that
// looks healthy to every probe but the first write.
func Open(dir string, opts Options) (*Backend, error) {
	logger := opts.Logger
	if logger == nil {
		logger = discardLogger()
	}
	fsys := opts.FS
	if fsys == nil {
		fsys = vfs.Default
	}
	b := &Backend{
		dir:     dir,
		sync:    !opts.NoSync,
		opts:    opts,
		fs:      fsys,
		logger:  logger,
		plog:    pebbleLogger{log: logger, limit: newLogLimiter(pebbleLogEvery)},
		guard:   newDiskGuard(logger),
		closing: make(chan struct{}),
		refs:    make(map[string][]byte),
	}
	if err := b.preflight(); err != nil {
		return nil, fmt.Errorf("pebblebackend: open %s: %w", dir, err)
	}
	db, err := b.openDB()
	if err != nil {
		return nil, fmt.Errorf("pebblebackend: open %s: %w", dir, err)
	}
	b.db = db
	if err := b.load(); err != nil {
		return nil, errors.Join(fmt.Errorf("pebblebackend: open %s: %w", dir, err), db.Close())
	}
	// From here on a refusing disk stalls writes instead of failing them.
	b.guard.holding.Store(true)
	return b, nil
}

// minFreeBytes is the free space Open requires: room to flush one full
// memtable, the largest write the store makes on its own.
const minFreeBytes = memTableSize

// probeName is the file preflight writes and removes.
const probeName = "floe-write-probe"

// preflight checks that the disk holding the store takes writes: enough
// free space, and a file in the directory can be created, written, synced
// and removed. It creates the directory if needed.
func (b *Backend) preflight() error {
	if err := b.fs.MkdirAll(b.dir, 0o755); err != nil {
		return fmt.Errorf("the store cannot write in its directory: %w", err)
	}
	if du, err := b.fs.GetDiskUsage(b.dir); err == nil && du.AvailBytes < minFreeBytes {
		// Some file systems (in-memory ones) cannot say; only a known
		// shortage stops the start.
		return fmt.Errorf("the disk holding the store has %d MiB free, and the store needs %d MiB to start: free space and start again: %w",
			du.AvailBytes>>20, minFreeBytes>>20, backend.ErrUnavailable)
	}
	if err := probeWrite(b.fs, b.fs.PathJoin(b.dir, probeName)); err != nil {
		return fmt.Errorf("the store cannot write in its directory: %w", err)
	}
	return nil
}

// probeWrite creates path, writes and syncs a page, and removes it.
func probeWrite(fsys vfs.FS, path string) error {
	f, err := fsys.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	_, err = f.Write(make([]byte, 4096))
	if err == nil {
		err = f.Sync()
	}
	err = errors.Join(err, f.Close())
	if rmErr := fsys.Remove(path); rmErr != nil && !errors.Is(rmErr, fs.ErrNotExist) {
		err = errors.Join(err, rmErr)
	}
	return err
}

// openDB opens Pebble in b.dir over the guarded file system. Each call
// builds its own options: a reopen must not reuse the block cache the
// closed database released.
func (b *Backend) openDB() (*pebble.DB, error) {
	cacheSize := b.opts.CacheSize
	if cacheSize <= 0 {
		cacheSize = defaultCacheSize
	}
	cache := pebble.NewCache(cacheSize)
	// The database takes its own reference to the cache.
	defer cache.Unref()

	popts := &pebble.Options{
		FS:                 guardFS{FS: b.fs, g: b.guard},
		Cache:              cache,
		FormatMajorVersion: FormatMajorVersion,
		Logger:             b.plog,
		// Object keys are SHA-256 hashes, so every flushed table spans the
		// whole key space and overlaps everything below it. A larger
		// memtable means fewer, larger flushes and much less compaction
		// per commit than the 4 MiB default.
		MemTableSize: memTableSize,
	}
	// Objects are mostly SHA-256 hashes, which do not compress: Snappy
	// saved 2.5% of the table bytes of 64,000 commits but cost about 8% of
	// the CPU of each commit in flushes and compactions. Tables written
	// with compression by earlier versions stay readable.
	popts.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	return pebble.Open(b.dir, popts)
}

// load checks the format marker (writing it into an empty database), fills
// the ref mirror and finds the next log sequence number.
func (b *Backend) load() error {
	if err := b.checkFormat(); err != nil {
		return err
	}
	if err := b.loadRefs(); err != nil {
		return err
	}
	last, err := b.lastLogSeq()
	if err != nil {
		return err
	}
	b.nextSeq = last + 1
	b.durableSeq.Store(last)
	return nil
}

func (b *Backend) checkFormat() error {
	v, closer, err := b.db.Get([]byte(formatKey))
	switch {
	case err == nil:
		got := string(v)
		if cerr := closer.Close(); cerr != nil {
			return cerr
		}
		if got != formatVersion {
			return fmt.Errorf("format marker is %+q, this build reads %q: %w", got, formatVersion, ErrUnknownFormat)
		}
		return nil
	case !errors.Is(err, pebble.ErrNotFound):
		return fmt.Errorf("read format marker: %w", err)
	}

	// No marker: only an empty database may be adopted.
	it, err := b.db.NewIter(nil)
	if err != nil {
		return err
	}
	nonEmpty := it.First()
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("scan for existing data: %w", err)
	}
	if nonEmpty {
		return fmt.Errorf("database has data but no format marker: %w", ErrUnknownFormat)
	}
	if err := b.db.Set([]byte(formatKey), []byte(formatVersion), pebble.Sync); err != nil {
		return fmt.Errorf("write format marker: %w", err)
	}
	return nil
}

func (b *Backend) loadRefs() error {
	it, err := b.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{prefixRef},
		UpperBound: []byte{prefixRef + 1},
	})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			return errors.Join(fmt.Errorf("load refs: %w", err), it.Close())
		}
		b.refs[string(it.Key()[1:])] = append([]byte{}, v...)
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil {
		return fmt.Errorf("load refs: %w", err)
	}
	return nil
}

// lastLogSeq returns the newest log record's seq, or 0 if the log is empty.
// Seqs start at 1, so 0 never names a record.
func (b *Backend) lastLogSeq() (uint64, error) {
	it, err := b.db.NewIter(&pebble.IterOptions{
		LowerBound: []byte{prefixLog},
		UpperBound: []byte{prefixLog + 1},
	})
	if err != nil {
		return 0, err
	}
	var seq uint64
	if it.Last() {
		seq, err = decodeLogKey(it.Key())
	}
	if err := errors.Join(err, it.Error(), it.Close()); err != nil {
		return 0, fmt.Errorf("find last log record: %w", err)
	}
	return seq, nil
}
