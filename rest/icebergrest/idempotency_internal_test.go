package icebergrest

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

func TestISODuration(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{30 * time.Minute, "PT30M"},
		{time.Hour, "PT1H"},
		{90*time.Minute + 5*time.Second, "PT1H30M5S"},
		{48 * time.Hour, "PT48H"},
		{45 * time.Second, "PT45S"},
		{1500 * time.Millisecond, "PT1.5S"},
		{time.Millisecond, "PT0.001S"},
	} {
		if got := isoDuration(tc.d); got != tc.want {
			t.Errorf("isoDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestOutcomeRoundTrip(t *testing.T) {
	for _, rp := range []*reply{
		jsonReply(200, map[string]string{"a": "line\nbreak"}).withETag(`"abc"`),
		noContent(),
		{status: 409, body: [][]byte{[]byte("\n\nbody with\n"), []byte("newlines\n")}},
	} {
		fp, got, err := decodeOutcome(encodeOutcome("f1", rp))
		if err != nil {
			t.Fatal(err)
		}
		if fp != "f1" || got.status != rp.status || !bytes.Equal(got.bodyBytes(), rp.bodyBytes()) || len(got.header) != len(rp.header) {
			t.Fatalf("round trip of %+v gave %q %+v", rp, fp, got)
		}
		for k, v := range rp.header {
			if got.header[k] != v {
				t.Fatalf("header %s = %q, want %q", k, got.header[k], v)
			}
		}
	}
	for _, bad := range []string{"", "no newline", `{"v":2,"status":200}` + "\n", `{"v":1,"status":0}` + "\n", "{\n"} {
		if _, _, err := decodeOutcome([]byte(bad)); err == nil {
			t.Errorf("decodeOutcome(%q) succeeded", bad)
		}
	}
}

// TestJoinCoalesces checks the in-process coalescing: a second request
// with the key waits for the first and gets its final outcome; after a
// non-final outcome it runs itself.
func TestJoinCoalesces(t *testing.T) {
	k := newIdempotency(time.Minute)
	ctx := t.Context()
	own, _, err := k.join(ctx, "k", func() {})
	if err != nil || own == nil {
		t.Fatalf("first join: %v %v", own, err)
	}
	var waited atomic.Int32
	type result struct{ own, finished *flight }
	results := make(chan result, 2)
	for range 2 {
		go func() {
			o, f, err := k.join(ctx, "k", func() { waited.Add(1) })
			if err != nil {
				t.Error(err)
			}
			results <- result{o, f}
		}()
	}
	for waited.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	if other, _, _ := k.join(ctx, "other", func() { t.Error("a different key waited") }); other == nil {
		t.Fatal("a different key was not free")
	} else {
		k.finish("other", other, "", nil)
	}
	// A non-final outcome: one waiter runs, the other waits for it.
	k.finish("k", own, "", nil)
	r := <-results
	if r.own == nil {
		t.Fatal("after a non-final outcome no waiter ran the request")
	}
	select {
	case r := <-results:
		t.Fatalf("second waiter did not wait: %+v", r)
	case <-time.After(20 * time.Millisecond):
	}
	k.finish("k", r.own, "fp", noContent())
	r = <-results
	if r.finished == nil || r.finished.fingerprint != "fp" || r.finished.outcome.status != 204 {
		t.Fatalf("waiter got %+v", r)
	}

	// A waiter whose request ends gives up.
	own, _, _ = k.join(ctx, "k", func() {})
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := k.join(cctx, "k", func() {}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	k.finish("k", own, "", nil)
}

// TestExpireRecords runs the background sweep with a fake clock and checks
// it deletes expired records and keeps the others.
func TestExpireRecords(t *testing.T) {
	be, err := pebblebackend.Open(filepath.Join(t.TempDir(), "data"), pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := versionstore.Open(t.Context(), be, versionstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	cat, err := catalog.New(store, catalog.Config{Warehouses: []catalog.Warehouse{{Name: "lake", Location: "file:///lake"}}}, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := newAPI(Deps{Store: store, Catalog: cat, Warehouses: []Warehouse{{Name: "lake", Location: "file:///lake"}},
		IdempotencyKeyLifetime: time.Hour, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	if err != nil {
		t.Fatal(err)
	}
	a.ik.sweepEvery = time.Millisecond
	start := a.now()
	for key, expires := range map[string]time.Time{"old": start.Add(time.Minute), "young": start.Add(2 * time.Hour)} {
		if err := store.PutRecord(t.Context(), versionstore.Record{Key: key, Value: []byte("x"), Expires: expires}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { a.expireRecords(ctx); close(done) }()
	now.Add(int64(time.Hour))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := store.GetRecord(t.Context(), "old"); errors.Is(err, versionstore.ErrRecordNotFound) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the expired record was not deleted")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := store.GetRecord(t.Context(), "young"); err != nil {
		t.Fatalf("a live record went: %v", err)
	}
	cancel()
	<-done
}
