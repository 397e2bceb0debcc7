package mergequeue_test

import (
	"context"
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/merge/mergequeue"
	"github.com/floe-catalog/floe/server/assemble"
	"github.com/floe-catalog/floe/versionstore"
)

// TestSchemaChangesRule: a source that changes a table's schema waits in
// review under the default rules (schemaChanges "review") and is merged
// at once under "merge"; a replaced table (a new uuid) is reviewed under
// either. Only the source changes the table (a key-level fast-forward),
// so no metadata is read: the ids of the version-store values decide.
func TestSchemaChangesRule(t *testing.T) {
	table := func(uuid string, schema int32) *versionstore.Content {
		return &versionstore.Content{Type: versionstore.IcebergTable, ID: "t", UUID: uuid, SchemaID: schema,
			MetadataLocation: "file:///nowhere/" + uuid + "/" + string(rune('0'+schema)) + ".metadata.json"}
	}
	for _, tc := range []struct {
		name, rule string
		change     *versionstore.Content
		want       string
	}{
		{"schema change, review", "", table("u1", 1), mergequeue.StateReview},
		{"schema change, merge", mergequeue.SchemaChangesMerge, table("u1", 1), mergequeue.StateMerged},
		{"replaced table, merge", mergequeue.SchemaChangesMerge, table("u2", 0), mergequeue.StateReview},
		{"no structure change, review", "", &versionstore.Content{Type: versionstore.IcebergTable, ID: "t", UUID: "u1",
			SnapshotID: 7, MetadataLocation: "file:///nowhere/u1/snap.metadata.json"}, mergequeue.StateMerged},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := mergequeue.DefaultRules()
			rules.SchemaChanges = tc.rule
			// No validator reads the tables (their metadata files do not
			// exist): the queue's own rule is what is tested.
			pass := mergequeue.ValidatorFunc(func(context.Context, mergequeue.Candidate) ([]mergequeue.CheckResult, error) { return nil, nil })
			srv := testserver.Start(t, testserver.Options{MergeQueue: func(c *assemble.MergeQueue) { c.Manual, c.Rules = true, &rules },
				Deps: func(d *assemble.Deps) { d.MergeValidator = pass }})
			ctx := t.Context()
			key := versionstore.ContentKey{"t"}
			main, _ := srv.Store.GetRef("main")
			head, err := srv.Store.Commit(ctx, versionstore.CommitRequest{Branch: "main", Expected: main.Head, Committer: "etl",
				Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: key, Content: table("u1", 0)}}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := srv.Store.CreateRef(ctx, versionstore.CreateRefRequest{Name: "users/a/x", Type: versionstore.Branch, Target: head.Commit.Hash}); err != nil {
				t.Fatal(err)
			}
			if _, err := srv.Store.Commit(ctx, versionstore.CommitRequest{Branch: "users/a/x", Expected: head.Commit.Hash, Committer: "etl",
				Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: key, Content: tc.change}}}); err != nil {
				t.Fatal(err)
			}
			r, _, err := srv.Queue.Submit(ctx, mergequeue.SubmitRequest{Source: "users/a/x", Target: "main", Principal: "etl"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := srv.Queue.Process(ctx, "main"); err != nil {
				t.Fatal(err)
			}
			got, err := srv.Queue.Get(r.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tc.want {
				t.Fatalf("request is %s (%s), want %s", got.State, got.Reason, tc.want)
			}
		})
	}
}
