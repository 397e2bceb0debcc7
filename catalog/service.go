package catalog

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/internal/keyedmutex"
	"github.com/floe-catalog/floe/versionstore"
)

// Config is the catalog's configuration: plain data, no live objects.
type Config struct {
	// Warehouses lists the warehouses served; at least one. Each is
	// opened once and shared by everything that reads or writes its
	// files: the APIs, the merge engine, GC, merge checks, table
	// statistics.
	Warehouses []Warehouse
	// MetadataCacheBytes bounds the memory of the cache of table metadata
	// files shared by the warehouses (approximately: see
	// icebergtable.MetadataCache). 0 means
	// icebergtable.DefaultMetadataCacheBytes; negative turns the cache off.
	MetadataCacheBytes int64
	// MaxMetadataFileBytes bounds one metadata file read (see
	// icebergtable.Config); 0 means
	// icebergtable.DefaultMaxMetadataFileBytes.
	MaxMetadataFileBytes int64
	// CommitRetries bounds server-side retries of one table commit whose
	// tables another writer changed between read and commit; 0 means
	// DefaultCommitRetries, negative means none.
	CommitRetries int
	// RetryBackoff is the first pause between server-side retries, doubled
	// each time up to 32 times as long; 0 means 5ms.
	RetryBackoff time.Duration
}

// DefaultCommitRetries is how many times a table commit is re-validated
// and re-applied on a newer head after another writer changed the same
// table between read and commit.
const DefaultCommitRetries = 8

// Warehouse is one named catalog root: every table and view location
// must lie below Location or one of AllowedLocations.
type Warehouse struct {
	Name string
	// Location is the root URL of table data, e.g. file:///srv/lake or
	// s3://bucket/prefix.
	Location string
	// IOProperties are iceberg-go FileIO properties (io.LoadFS) for the
	// catalog's own metadata reads and writes under Location, e.g.
	// icebergtable.S3Options.IOProperties; nil for local files.
	IOProperties map[string]string
	// AllowedLocations are extra location prefixes clients may place
	// tables and views under besides Location (icebergtable.Config).
	AllowedLocations []string
}

// Options are the catalog's live collaborators; nil fields mean none.
type Options struct {
	Logger *slog.Logger
	// TracerProvider traces every metadata file read and write; nil
	// records nothing.
	TracerProvider trace.TracerProvider
	// Now is the clock of rebased snapshots' commit times; nil means
	// time.Now.
	Now func() time.Time
}

// Service is the catalog: the warehouses and their shared metadata
// cache over one version store. Build it once (New) and hand it, or the
// pieces of it they need, to every API and background worker.
type Service struct {
	store  *versionstore.Store
	logger *slog.Logger
	// cache holds the table metadata files of all warehouses; nil when
	// turned off.
	cache *icebergtable.MetadataCache
	// warehouses in the order configured; byName indexes them.
	warehouses icebergtable.Warehouses
	byName     map[string]*icebergtable.Warehouse
	// retries and backoff are Config.CommitRetries and RetryBackoff,
	// defaulted.
	retries int
	backoff time.Duration
	now     func() time.Time
	// tables serializes commits to one table on one branch (see
	// tableLockKey).
	tables keyedmutex.Mutex
}

// New opens the configured warehouses over one shared metadata cache. It
// starts nothing and holds nothing that needs closing.
func New(store *versionstore.Store, cfg Config, opts Options) (*Service, error) {
	if store == nil {
		return nil, errors.New("catalog: no version store")
	}
	if len(cfg.Warehouses) == 0 {
		return nil, errors.New("catalog: no warehouse configured")
	}
	s := &Service{store: store, logger: opts.Logger, byName: map[string]*icebergtable.Warehouse{},
		retries: cfg.CommitRetries, backoff: cfg.RetryBackoff, now: opts.Now}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.retries == 0 {
		s.retries = DefaultCommitRetries
	} else if s.retries < 0 {
		s.retries = 0
	}
	if s.backoff <= 0 {
		s.backoff = 5 * time.Millisecond
	}
	if s.now == nil {
		s.now = time.Now
	}
	tp := opts.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	switch n := cfg.MetadataCacheBytes; {
	case n == 0:
		s.cache = icebergtable.NewMetadataCache(icebergtable.DefaultMetadataCacheBytes)
	case n > 0:
		s.cache = icebergtable.NewMetadataCache(n)
	}
	for _, w := range cfg.Warehouses {
		if w.Name == "" || strings.ContainsAny(w.Name, "@|/") {
			return nil, fmt.Errorf("catalog: invalid warehouse name %q: it must be non-empty without '@', '|' or '/'", w.Name)
		}
		if _, dup := s.byName[w.Name]; dup {
			return nil, fmt.Errorf("catalog: warehouse %q configured twice", w.Name)
		}
		files, err := icebergtable.OpenWarehouse(icebergtable.Config{
			Name: w.Name, Location: w.Location, IOProperties: w.IOProperties, Cache: s.cache,
			MaxMetadataFileBytes: cfg.MaxMetadataFileBytes, AllowedLocations: w.AllowedLocations, TracerProvider: tp,
		})
		if err != nil {
			return nil, fmt.Errorf("catalog: %w", err)
		}
		s.byName[w.Name] = files
		s.warehouses = append(s.warehouses, files)
	}
	return s, nil
}

// Store is the version store the catalog commits to.
func (s *Service) Store() *versionstore.Store { return s.store }

// Warehouses are the catalog's warehouses, in the order configured: the
// rule for every location a client names, and the file IO of every
// metadata file (see icebergtable.Innermost).
func (s *Service) Warehouses() icebergtable.Warehouses { return s.warehouses }

// Warehouse returns the warehouse named name.
func (s *Service) Warehouse(name string) (*icebergtable.Warehouse, bool) {
	w, ok := s.byName[name]
	return w, ok
}

// MetadataCache is the cache of table metadata files the warehouses
// share; nil when turned off.
func (s *Service) MetadataCache() *icebergtable.MetadataCache { return s.cache }
