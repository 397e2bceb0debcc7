package assemble

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
	"github.com/floe-catalog/floe/versionstore/pgbackend"
)

// StoreKind is a version-store backend Config.Store can select.
type StoreKind string

// The backends.
const (
	StorePebble   StoreKind = "pebble"
	StorePostgres StoreKind = "postgres"
)

// ParseStore reads Config.Store: "" or "pebble:DIR" (DIR "" keeps
// dataDir) is Pebble in that directory; a postgres:// or postgresql://
// URL, or "postgres:" followed by a key=value DSN, is PostgreSQL. It
// returns the kind and the directory or DSN.
func ParseStore(store, dataDir string) (StoreKind, string, error) {
	switch {
	case store == "":
		return StorePebble, dataDir, nil
	case strings.HasPrefix(store, "pebble:"):
		if dir := strings.TrimPrefix(store, "pebble:"); dir != "" {
			return StorePebble, dir, nil
		}
		return StorePebble, dataDir, nil
	case strings.HasPrefix(store, "postgres://"), strings.HasPrefix(store, "postgresql://"):
		return StorePostgres, store, nil
	case strings.HasPrefix(store, "postgres:"):
		return StorePostgres, strings.TrimPrefix(store, "postgres:"), nil
	}
	// The value may hold a password: do not echo it.
	return "", "", errors.New("unknown store: want pebble:DIR or a postgres:// URL")
}

// Default budgets of the version store's cache of decoded objects, by
// backend. The cache's commits and contents are most of a serving floe's
// pointer-holding heap, which every garbage collection marks: at 2,000
// Iceberg commits a second on Pebble a full 128 MiB cache cost 40 µs of
// collection per commit, 32 MiB 18-20 µs (GODEBUG=gctrace=1, property
// commits of conformance/testkit/icebergpeers, issue 14), while a miss there is a
// memtable or block cache read. On PostgreSQL a miss is a round trip to
// the database, worth more memory.
const (
	DefaultPebbleStoreCacheBytes   = 32 << 20
	DefaultPostgresStoreCacheBytes = 128 << 20
)

// StoreCacheBytes is the budget of the version store's cache cfg asks
// for: cfg.StoreCacheBytes, or its backend's default when that is 0 (or
// the store is not valid, which opening it reports).
func StoreCacheBytes(cfg Config) int64 {
	if cfg.StoreCacheBytes > 0 {
		return cfg.StoreCacheBytes
	}
	if kind, _, err := ParseStore(cfg.Store, cfg.DataDir); err == nil && kind == StorePostgres {
		return DefaultPostgresStoreCacheBytes
	}
	return DefaultPebbleStoreCacheBytes
}

// storeOptions are the version store's options on either backend. The
// merge queue's candidate branches are scratch refs: the queue merges each
// member onto its candidate, which nothing durable names before the
// landing (a durable write) and which a crash drops anyway, so those
// merges are not each flushed to disk.
func storeOptions(p *Process, cacheBytes int64) versionstore.Options {
	return versionstore.Options{Logger: p.logger, CacheBytes: cacheBytes, TracerProvider: p.tracer,
		ScratchRefPrefixes: []string{mergequeue.CandidatePrefix}}
}

// openStoreOf opens the version store cfg.Store selects; an embedded
// one on fs (nil: the real disk).
func (p *Process) openStoreOf(ctx context.Context, cfg Config, fs vfs.FS, reg prometheus.Registerer) error {
	kind, where, err := ParseStore(cfg.Store, cfg.DataDir)
	if err != nil {
		return err
	}
	if kind == StorePebble {
		return p.openStore(ctx, where, StoreCacheBytes(cfg), fs, reg)
	}
	be, err := pgbackend.Open(ctx, where, pgbackend.Options{Logger: p.logger})
	if err != nil {
		return fmt.Errorf("opening the PostgreSQL store backend: %w", err)
	}
	store, err := versionstore.Open(ctx, be, storeOptions(p, StoreCacheBytes(cfg)))
	if err != nil {
		return errors.Join(fmt.Errorf("opening version store on PostgreSQL: %w", err), be.Close())
	}
	p.store = store
	p.logger.Info("version store open", "backend", "postgres", "schema_version", pgbackend.SchemaVersion())
	p.onClose("version store", store.Close)
	return nil
}

// registerStoreFaults exports the embedded store's fault counts: how often
// its disk refused writes, and how often it reopened itself after a write
// it could not make durable.
func registerStoreFaults(reg prometheus.Registerer, be *pebblebackend.Backend) error {
	for _, c := range []struct {
		name, help string
		v          func(pebblebackend.FaultStats) uint64
	}{
		{"floe_versionstore_disk_refusals_total", "Times the embedded store's disk started refusing writes (full, or the data directory unwritable).",
			func(f pebblebackend.FaultStats) uint64 { return f.DiskRefusals }},
		{"floe_versionstore_reopens_total", "Times the embedded store reopened itself after a write it could not make durable (a failed fsync).",
			func(f pebblebackend.FaultStats) uint64 { return f.Reopens }},
	} {
		v := c.v
		if err := reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: c.name, Help: c.help},
			func() float64 { return float64(v(be.Faults())) })); err != nil {
			return err
		}
	}
	return nil
}
