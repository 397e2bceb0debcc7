package versionstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/floe-catalog/floe/versionstore/pebblebackend"
)

// walSyncSwitch fails the fsyncs of Pebble's write-ahead logs with EIO
// while on: the fault that cannot be waited out (see pebblebackend's
// diskguard.go), only reopened after.
type walSyncSwitch struct{ on atomic.Bool }

func (w *walSyncSwitch) MaybeError(op errorfs.Op) error {
	switch op.Kind {
	case errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo:
		if w.on.Load() && strings.HasSuffix(op.Path, ".log") {
			return &os.PathError{Op: "fsync", Path: op.Path, Err: syscall.EIO}
		}
	}
	return nil
}

func (w *walSyncSwitch) String() string { return "wal sync switch" }

// TestCommitsResumeAfterAFailedWALSync fails a WAL fsync under the store:
// that commit's outcome is unknown, the next one is refused as unavailable
// before it queues, and Check says why. Once the backend has reopened
// itself, commits on the same branch succeed again whether or not the
// failed one reached the disk (if it did, the store's next batch finds the
// branch moved and rebases onto it), and every acknowledged commit is kept.
func TestCommitsResumeAfterAFailedWALSync(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var fault walSyncSwitch
	be, err := pebblebackend.Open(dir, pebblebackend.Options{FS: errorfs.Wrap(vfs.Default, &fault)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), be, Options{})
	if err != nil {
		t.Fatal(errors.Join(err, be.Close()))
	}
	var acked []ContentKey
	commit := func(k ContentKey) error {
		_, err := s.Commit(context.Background(), CommitRequest{Branch: DefaultBranch, Expected: head(t, s, DefaultBranch),
			Operations: []Operation{put(k, ns())}, Meta: CommitMeta{Message: "test"}, Committer: "tester"})
		if err == nil {
			acked = append(acked, k)
		}
		return err
	}
	for i := range 5 {
		if err := commit(key(fmt.Sprintf("before%d", i))); err != nil {
			t.Fatal(err)
		}
	}

	fault.on.Store(true)
	if err := commit(key("failed")); !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("commit whose WAL sync failed: %v, want ErrOutcomeUnknown", err)
	}
	if err := commit(key("refused")); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrOutcomeUnknown) ||
		!strings.Contains(err.Error(), "input/output error") {
		t.Fatalf("commit after the failed sync: %v, want ErrUnavailable with the cause, outcome known", err)
	}
	if err := s.Check(t.Context()); err == nil || !strings.Contains(err.Error(), "input/output error") {
		t.Fatalf("Check after the failed sync: %v, want the cause", err)
	}
	if st := s.Stats(); st.UnknownOutcomes.Load() != 1 || st.UnavailableWrites.Load() != 1 || st.Writable() {
		t.Errorf("stats: %d unknown outcomes, %d unavailable writes, writable %v; want 1, 1, false",
			st.UnknownOutcomes.Load(), st.UnavailableWrites.Load(), st.Writable())
	}

	fault.on.Store(false)
	deadline := time.Now().Add(30 * time.Second)
	for s.Writable() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("the store did not take writes again: %v", s.Writable())
		}
		time.Sleep(10 * time.Millisecond)
	}
	for i := range 5 {
		if err := commit(key(fmt.Sprintf("after%d", i))); err != nil {
			t.Fatalf("commit after the store was reopened: %v", err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStoreAt(t, dir, Options{})
	h := head(t, s, DefaultBranch)
	for _, k := range acked {
		if _, err := s.GetContent(t.Context(), h, k); err != nil {
			t.Errorf("acknowledged %v after reopening: %v", k, err)
		}
	}
	if _, err := s.GetContent(t.Context(), h, key("refused")); !errors.Is(err, ErrContentNotFound) {
		t.Errorf("the refused commit's key: %v, want ErrContentNotFound", err)
	}
}
