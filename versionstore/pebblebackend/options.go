package pebblebackend

import (
	"log/slog"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// defaultCacheSize is the Pebble block cache used when Options.CacheSize is
// zero: large enough to hold the hot refs, recent commits and the log tail of
// a busy catalog, small enough for an embedded deployment.
const defaultCacheSize = 64 << 20

// memTableSize is Pebble's memtable size; see Open.
const memTableSize = 64 << 20

// Options configures Open. The zero value is the production configuration:
// the real filesystem, synced writes, a 64 MiB block cache and no logging.
type Options struct {
	// FS is the filesystem the database lives on. Nil means the real disk
	// (vfs.Default); tests pass vfs.NewMem().
	FS vfs.FS
	// NoSync makes Apply return before the batch reaches stable storage. Only
	// for tests: a crash may lose acknowledged writes.
	NoSync bool
	// CacheSize is Pebble's block cache in bytes; zero means 64 MiB.
	CacheSize int64
	// Logger receives Pebble's messages: informational ones at Debug, errors
	// at Error. Nil discards them.
	Logger *slog.Logger
}
