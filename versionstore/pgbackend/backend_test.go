package pgbackend_test

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
	"github.com/floe-catalog/floe/versionstore/backend"
	"github.com/floe-catalog/floe/versionstore/backend/backendtest"
	"github.com/floe-catalog/floe/versionstore/pgbackend"
)

// cluster is the package's one PostgreSQL cluster; nil when PostgreSQL is
// not installed (tests then skip, see pgtest.Need).
var cluster *pgtest.Cluster

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m, &cluster)) }

// openSchema opens a backend over the schema named after key, creating it.
func openSchema(t testing.TB, key string) *pgbackend.Backend {
	t.Helper()
	c := pgtest.Need(t, cluster)
	dsn, err := c.Schema(t.Context(), pgtest.SchemaName(key))
	if err != nil {
		t.Fatal(err)
	}
	b, err := pgbackend.Open(t.Context(), dsn, pgbackend.Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return b
}

func TestConformance(t *testing.T) {
	t.Parallel()
	pgtest.Need(t, cluster)
	backendtest.RunConformance(t, func(t *testing.T, dir string) backend.Backend {
		return openSchema(t, dir)
	})
}

// TestOpenRefusesNewerSchema: a database migrated by a newer build must not
// be written by this one.
func TestOpenRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	c := pgtest.Need(t, cluster)
	dsn, err := c.Schema(t.Context(), pgtest.SchemaName(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	b, err := pgbackend.Open(t.Context(), dsn, pgbackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), `INSERT INTO floe_schema_version (version) VALUES ($1)`, pgbackend.SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	_, err = pgbackend.Open(t.Context(), dsn, pgbackend.Options{})
	if !errors.Is(err, pgbackend.ErrSchemaTooNew) {
		t.Fatalf("open over a newer schema: got %v, want ErrSchemaTooNew", err)
	}
}

// TestConcurrentOpenMigratesOnce starts several backends at once on an empty
// schema, as replicas starting together do: all must open, and the schema
// must be migrated exactly once.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	t.Parallel()
	c := pgtest.Need(t, cluster)
	dsn, err := c.Schema(t.Context(), pgtest.SchemaName(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	const replicas = 6
	var wg sync.WaitGroup
	errs := make([]error, replicas)
	for i := range replicas {
		wg.Go(func() {
			b, err := pgbackend.Open(t.Context(), dsn, pgbackend.Options{})
			if err == nil {
				err = b.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d: %v", i, err)
		}
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var n, maxV int
	if err := conn.QueryRow(t.Context(), `SELECT count(*), max(version) FROM floe_schema_version`).Scan(&n, &maxV); err != nil {
		t.Fatal(err)
	}
	if n != pgbackend.SchemaVersion() || maxV != pgbackend.SchemaVersion() {
		t.Fatalf("schema versions: %d rows up to %d, want %d", n, maxV, pgbackend.SchemaVersion())
	}
}

// TestTwoBackendsOneDatabase: a compare-and-swap is decided by the
// database, not by either process, so two backends over one schema see
// each other's writes and lose to each other's moves.
func TestTwoBackendsOneDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := openSchema(t, dir), openSchema(t, dir)
	t.Cleanup(func() { a.Close(); b.Close() })
	ctx := t.Context()
	if err := a.Apply(ctx, backend.Batch{Refs: []backend.RefUpdate{{Name: "main", New: []byte("m1")}}}); err != nil {
		t.Fatal(err)
	}
	if v, err := b.GetRef(ctx, "main"); err != nil || string(v) != "m1" {
		t.Fatalf("other backend reads %q, %v; want m1", v, err)
	}
	if err := b.Apply(ctx, backend.Batch{Refs: []backend.RefUpdate{{Name: "main", Expected: []byte("m1"), New: []byte("m2")}}}); err != nil {
		t.Fatal(err)
	}
	err := a.Apply(ctx, backend.Batch{Refs: []backend.RefUpdate{{Name: "main", Expected: []byte("m1"), New: []byte("m3")}}})
	if !errors.Is(err, backend.ErrRefConflict) {
		t.Fatalf("stale compare-and-swap: got %v, want ErrRefConflict", err)
	}
}

// TestLockRef: while one backend holds a ref's row, another backend's
// compare-and-swap from the same value cannot slip in: the holder's write
// lands, and the other is refused afterwards.
func TestLockRef(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a, b := openSchema(t, dir), openSchema(t, dir)
	t.Cleanup(func() { a.Close(); b.Close() })
	ctx := t.Context()
	if err := a.Apply(ctx, backend.Batch{Refs: []backend.RefUpdate{{Name: "main", New: []byte("m1")}}}); err != nil {
		t.Fatal(err)
	}
	for round := range 5 {
		cur := fmt.Sprintf("m%d", round+1)
		held, err := a.LockRef(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		if string(held.Value()) != cur {
			t.Fatalf("locked value %q, want %q", held.Value(), cur)
		}
		other := make(chan error, 1)
		go func() {
			other <- b.Apply(ctx, backend.Batch{Refs: []backend.RefUpdate{{Name: "main", Expected: []byte(cur), New: []byte("theirs")}}})
		}()
		next := fmt.Sprintf("m%d", round+2)
		if err := held.Apply(ctx, backend.Batch{Refs: []backend.RefUpdate{{Name: "main", Expected: []byte(cur), New: []byte(next)}}, Log: [][]byte{[]byte(next)}}); err != nil {
			t.Fatalf("round %d: the holder's write: %v", round, err)
		}
		if err := <-other; !errors.Is(err, backend.ErrRefConflict) {
			t.Fatalf("round %d: the other writer: got %v, want ErrRefConflict", round, err)
		}
	}
	if v, err := b.GetRef(ctx, "main"); err != nil || string(v) != "m6" {
		t.Fatalf("main = %q, %v; want m6", v, err)
	}
	// A released lock writes nothing and lets others in.
	held, err := a.LockRef(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	held.Release()
	if err := b.Apply(ctx, backend.Batch{Refs: []backend.RefUpdate{{Name: "main", Expected: []byte("m6"), New: []byte("m7")}}}); err != nil {
		t.Fatal(err)
	}
}
