package mergequeue_test

import (
	"context"
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/versionstore"
)

// TestShutdownMidValidation: a server stopped while its queue's worker
// validates a candidate leaves the request queued (checks cut short say
// nothing about it), and the next start merges it.
func TestShutdownMidValidation(t *testing.T) {
	dir := t.TempDir()
	started := make(chan struct{}, 1)
	blocking := mergequeue.ValidatorFunc(func(ctx context.Context, c mergequeue.Candidate) ([]mergequeue.CheckResult, error) {
		started <- struct{}{}
		<-ctx.Done() // until the server stops
		return nil, ctx.Err()
	})
	srv := testserver.Start(t, testserver.Options{Dir: dir, Deps: func(d *assemble.Deps) { d.MergeValidator = blocking }})
	ctx := t.Context()
	main, _ := srv.Store.GetRef("main")
	if _, err := srv.Store.CreateRef(ctx, versionstore.CreateRefRequest{Name: "ingest/a", Type: versionstore.Branch, Target: main.Head}); err != nil {
		t.Fatal(err)
	}
	_, err := srv.Store.Commit(ctx, versionstore.CommitRequest{Branch: "ingest/a", Expected: main.Head, Committer: "etl",
		Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{"db"}, Content: &versionstore.Content{Type: versionstore.Namespace}}}})
	if err != nil {
		t.Fatal(err)
	}
	r, _, err := srv.Queue.Submit(ctx, mergequeue.SubmitRequest{Source: "ingest/a", Target: "main", Principal: "etl"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	srv.Stop()

	srv = testserver.Start(t, testserver.Options{Dir: dir, MergeQueue: func(c *assemble.MergeQueue) { c.Manual = true }})
	got, err := srv.Queue.Get(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != mergequeue.StateQueued {
		t.Fatalf("after the stop the request is %s (%s), want queued", got.State, got.Reason)
	}
	if _, err := srv.Queue.Process(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	if got, _ = srv.Queue.Get(r.ID); got.State != mergequeue.StateMerged {
		t.Fatalf("after the restart the request is %s (%s), want merged", got.State, got.Reason)
	}
	for _, ref := range srv.Store.ListRefs() {
		if ref.Name != "main" && ref.Name != "ingest/a" {
			t.Errorf("ref %s left behind", ref.Name)
		}
	}
}
