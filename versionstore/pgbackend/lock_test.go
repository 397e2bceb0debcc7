package pgbackend_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
	"github.com/floe-catalog/floe/versionstore/backend"
	"github.com/floe-catalog/floe/versionstore/pgbackend"
)

// TestLockRefReturnsHintAndRecentLog: the lock hands over what the last
// update left beside the value, and the newest log records, newest first,
// including the holder's own last append; an update without a hint clears
// it.
func TestLockRefReturnsHintAndRecentLog(t *testing.T) {
	t.Parallel()
	b := openSchema(t, t.TempDir())
	t.Cleanup(func() { b.Close() })
	ctx := t.Context()
	if err := b.Apply(ctx, backend.Batch{Refs: []backend.RefUpdate{{Name: "main", New: []byte("v0"), Hint: []byte("h0")}}, Log: [][]byte{[]byte("l0")}}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		held, err := b.LockRef(ctx, "main")
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("h%d", i-1); string(held.Hint()) != want {
			t.Fatalf("round %d: hint %q, want %q", i, held.Hint(), want)
		}
		recent := held.RecentLog()
		if len(recent) != i {
			t.Fatalf("round %d: %d recent log records, want %d", i, len(recent), i)
		}
		for j, r := range recent {
			if want := fmt.Sprintf("l%d", i-1-j); string(r.Value) != want || (j > 0 && r.Seq >= recent[j-1].Seq) {
				t.Fatalf("round %d: recent[%d] = seq %d %q, want %q newest first", i, j, r.Seq, r.Value, want)
			}
		}
		u := backend.RefUpdate{Name: "main", Expected: held.Value(), New: fmt.Appendf(nil, "v%d", i), Hint: fmt.Appendf(nil, "h%d", i)}
		if err := held.Apply(ctx, backend.Batch{Refs: []backend.RefUpdate{u}, Log: [][]byte{fmt.Appendf(nil, "l%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Apply(ctx, backend.Batch{Refs: []backend.RefUpdate{{Name: "main", Expected: []byte("v3"), New: []byte("v4")}}}); err != nil {
		t.Fatal(err)
	}
	held, err := b.LockRef(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	if held.Hint() != nil {
		t.Fatalf("hint %q after an update without one, want none", held.Hint())
	}
	// The hint is beside the value, never part of it.
	if v, err := b.GetRef(ctx, "main"); err != nil || string(v) != "v4" {
		t.Fatalf("main = %q, %v; want v4", v, err)
	}
}

// TestGetObjects reads objects in one call, in the order asked (an id
// asked twice answered twice), with nil for those that do not exist.
func TestGetObjects(t *testing.T) {
	t.Parallel()
	b := openSchema(t, t.TempDir())
	t.Cleanup(func() { b.Close() })
	ctx := t.Context()
	var objs []backend.Object
	for i := range 5 {
		data := fmt.Appendf(nil, "object %d", i)
		objs = append(objs, backend.Object{ID: backend.ObjectID{byte(i + 1)}, Data: data})
	}
	if err := b.Apply(ctx, backend.Batch{Objects: objs}); err != nil {
		t.Fatal(err)
	}
	ids := []backend.ObjectID{objs[3].ID, {0xee}, objs[0].ID, objs[4].ID, objs[3].ID}
	got, err := b.GetObjects(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]byte{objs[3].Data, nil, objs[0].Data, objs[4].Data, objs[3].Data}
	if len(got) != len(want) {
		t.Fatalf("%d results for %d ids", len(got), len(ids))
	}
	for i := range want {
		if !bytes.Equal(got[i], want[i]) || (got[i] == nil) != (want[i] == nil) {
			t.Fatalf("object %d: got %q, want %q", i, got[i], want[i])
		}
	}
	if got, err := b.GetObjects(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("no ids: %v, %v", got, err)
	}
}

// TestMigrateFromFirstSchema: a database written by a build with the first
// schema is migrated in place, its refs kept, and takes hints afterwards.
func TestMigrateFromFirstSchema(t *testing.T) {
	t.Parallel()
	c := pgtest.Need(t, cluster)
	ctx := t.Context()
	dsn, err := c.Schema(ctx, pgtest.SchemaName(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`CREATE TABLE floe_schema_version (version int PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
		`INSERT INTO floe_schema_version (version) VALUES (1)`,
		pgbackend.Migrations[0],
		`INSERT INTO floe_refs (name, value) VALUES ('main', 'v1')`,
	} {
		if _, err := conn.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	conn.Close(ctx)
	b, err := pgbackend.Open(ctx, dsn, pgbackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	held, err := b.LockRef(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	if string(held.Value()) != "v1" || held.Hint() != nil {
		t.Fatalf("after migration: value %q hint %q, want v1 and none", held.Value(), held.Hint())
	}
	if err := held.Apply(ctx, backend.Batch{Refs: []backend.RefUpdate{{Name: "main", Expected: []byte("v1"), New: []byte("v2"), Hint: []byte("h2")}}}); err != nil {
		t.Fatal(err)
	}
	held, err = b.LockRef(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	if string(held.Hint()) != "h2" {
		t.Fatalf("hint %q, want h2", held.Hint())
	}
}

// TestWaitingBatchHoldsNoObject: a batch waiting for a held ref's row has
// not inserted its objects yet. Replicas building on one head write
// identical objects; a waiter holding one while the holder inserts it
// closed a cycle the database broke by aborting a transaction (a commit
// failed with "deadlock detected" in TestReplicasNoLostUpdateUnderContention).
// The probe inserts the waiter's object with a lock timeout: it may not
// wait for the waiter.
func TestWaitingBatchHoldsNoObject(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	c := pgtest.Need(t, cluster)
	dsn, err := c.Schema(ctx, pgtest.SchemaName(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	holder, err := pgbackend.Open(ctx, dsn, pgbackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The waiter's sessions are found by their application name.
	app := "waiter-" + pgtest.SchemaName(t.TempDir())
	waiter, err := pgbackend.Open(ctx, dsn+"&application_name="+app, pgbackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { holder.Close(); waiter.Close() })
	if err := holder.Apply(ctx, backend.Batch{Refs: []backend.RefUpdate{{Name: "main", New: []byte("m1")}}}); err != nil {
		t.Fatal(err)
	}
	held, err := holder.LockRef(ctx, "main")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	shared := backend.Object{ID: backend.ObjectID{1, 2, 3}, Data: []byte("built on m1 by both")}
	waited := make(chan error, 1)
	go func() {
		waited <- waiter.Apply(ctx, backend.Batch{Objects: []backend.Object{shared},
			Refs: []backend.RefUpdate{{Name: "main", Expected: []byte("m1"), New: []byte("theirs")}}})
	}()

	probe, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer probe.Close(context.WithoutCancel(ctx))
	for {
		var n int
		if err := probe.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'`, app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		select {
		case err := <-waited:
			t.Fatalf("the waiting batch ended while the ref was held: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if _, err := probe.Exec(ctx, `SET lock_timeout = '10s'`); err != nil {
		t.Fatal(err)
	}
	if _, err := probe.Exec(ctx, `INSERT INTO floe_objects (id, data) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`, shared.ID[:], shared.Data); err != nil {
		t.Fatalf("inserting the object the waiting batch writes: %v (the waiter holds it while it waits for the ref)", err)
	}
	if err := held.Apply(ctx, backend.Batch{Objects: []backend.Object{shared},
		Refs: []backend.RefUpdate{{Name: "main", Expected: []byte("m1"), New: []byte("m2")}}}); err != nil {
		t.Fatalf("the holder's write: %v", err)
	}
	if err := <-waited; !errors.Is(err, backend.ErrRefConflict) {
		t.Fatalf("the waiting batch: got %v, want ErrRefConflict", err)
	}
}
