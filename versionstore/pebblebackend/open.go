package pebblebackend

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
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
func Open(dir string, opts Options) (*Backend, error) {
	logger := opts.Logger
	if logger == nil {
		logger = discardLogger()
	}
	cacheSize := opts.CacheSize
	if cacheSize <= 0 {
		cacheSize = defaultCacheSize
	}
	cache := pebble.NewCache(cacheSize)
	// The database takes its own reference to the cache.
	defer cache.Unref()

	popts := &pebble.Options{
		FS:                 opts.FS,
		Cache:              cache,
		FormatMajorVersion: FormatMajorVersion,
		Logger:             pebbleLogger{log: logger},
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
	db, err := pebble.Open(dir, popts)
	if err != nil {
		return nil, fmt.Errorf("pebblebackend: open %s: %w", dir, err)
	}
	b := &Backend{
		db:   db,
		dir:  dir,
		sync: !opts.NoSync,
		refs: make(map[string][]byte),
	}
	if err := b.load(); err != nil {
		return nil, errors.Join(fmt.Errorf("pebblebackend: open %s: %w", dir, err), db.Close())
	}
	return b, nil
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
