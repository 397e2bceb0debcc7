package pgbackend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/floe-catalog/floe/versionstore/backend"
)

var (
	_ backend.Backend = (*Backend)(nil)
	_ backend.Shared  = (*Backend)(nil)
)

// Options configures Open. The zero value is the production configuration.
type Options struct {
	// MaxConns bounds the connection pool; 0 means 32. Every group-commit
	// round holds one connection for its transaction, and reads take one
	// each, so a replica needs about as many as it has busy branches plus
	// concurrent readers.
	MaxConns int32
	// Logger receives retries and failures; nil discards them.
	Logger *slog.Logger
}

// Backend is a backend.Backend over one PostgreSQL database (or one schema
// of it, chosen by the DSN's search_path). All methods are safe for
// concurrent use, and several Backends, in one process or many, may share
// one database: every compare-and-swap is decided by the database.
type Backend struct {
	pool   *pgxpool.Pool
	name   string // the database, for error messages; never the password
	logger *slog.Logger

	// life guards the pool against Close: every method holds it shared for
	// its whole duration, Close holds it exclusively, so Close waits for
	// in-flight calls (an Apply that was admitted finishes and reports its
	// outcome) and nothing runs on a closed pool.
	life   sync.RWMutex
	closed bool // guarded by life
}

// Open connects to the database named by dsn (a postgres:// URL or a
// key=value string, as libpq takes), applies the schema migrations this
// build knows that the database lacks, and returns the backend. It refuses a
// database whose schema is newer than this build (ErrSchemaTooNew).
func Open(ctx context.Context, dsn string, opts Options) (*Backend, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parse error may quote the DSN, password included: do not
		// wrap it.
		return nil, errors.New("pgbackend: cannot parse the database address (a postgres:// URL or key=value string)")
	}
	cfg.MaxConns = opts.MaxConns
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = 32
	}
	// A connection that sat idle across a database restart is dead; the
	// pool notices on its next use. Health checks find it sooner.
	cfg.HealthCheckPeriod = 5 * time.Second
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	name := fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	if sp := cfg.ConnConfig.RuntimeParams["search_path"]; sp != "" {
		name += "?search_path=" + sp
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("pgbackend: open %s: %w", name, err)
	}
	b := &Backend{pool: pool, name: name, logger: logger}
	if err := b.migrate(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("pgbackend: open %s: %w", name, err)
	}
	return b, nil
}

// Shared reports that other processes may write the same database, so the
// version store must not trust its in-memory mirror of the references.
func (b *Backend) Shared() bool { return true }

// enter admits a call unless the backend is closed. A nil error must be
// paired with leave.
func (b *Backend) enter(op string) error {
	b.life.RLock()
	if b.closed {
		b.life.RUnlock()
		return fmt.Errorf("pgbackend: %s on %s: %w", op, b.name, backend.ErrClosed)
	}
	return nil
}

func (b *Backend) leave() { b.life.RUnlock() }

// Close waits for in-flight calls, then closes the connection pool. Calls
// made after Close, including a second Close, return backend.ErrClosed.
func (b *Backend) Close() error {
	b.life.Lock()
	defer b.life.Unlock()
	if b.closed {
		return fmt.Errorf("pgbackend: close %s: %w", b.name, backend.ErrClosed)
	}
	b.closed = true
	b.pool.Close()
	return nil
}

// describe names a batch for log lines: its refs, never its values.
func describe(batch backend.Batch) string {
	names := make([]string, len(batch.Refs))
	for i, u := range batch.Refs {
		names[i] = u.Name
	}
	return strings.Join(names, ",")
}
