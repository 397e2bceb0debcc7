package nessie_test

import (
	"net/http"
	"slices"
	"testing"
)

// TestMergeResolvedContent drives Nessie's client-side conflict
// resolution: keyMergeModes[].resolvedContent with expectedTargetContent
// and the NORMAL behavior writes the resolved value in a merge commit with
// two parents, only while the target holds the expected content.
func TestMergeResolvedContent(t *testing.T) {
	e := newEnv(t)
	e.commit("main", "ns", put(namespace("db"), "db"), put(table("file:///w/t1.json", 1), "db", "t"))
	e.branch("dev", "main")
	var c struct{ Content content }
	e.ok(http.MethodGet, "/trees/main/contents/db.t", nil, http.StatusOK, &c)
	id := c.Content.ID
	upd := func(loc string, snap int64) *content {
		x := table(loc, snap)
		x.ID = id
		return x
	}
	e.commit("dev", "dev change", put(upd("file:///w/dev.json", 2), "db", "t"), put(table("file:///w/u.json", 1), "db", "u"))
	devHead := e.head("dev")
	e.commit("main", "main change", put(upd("file:///w/main.json", 3), "db", "t"))
	e.ok(http.MethodGet, "/trees/main/contents/db.t", nil, http.StatusOK, &c)
	onMain := c.Content
	resolved := upd("file:///w/resolved.json", 4)
	otherID := table("file:///w/x.json", 1)
	otherID.ID = "a-different-id"
	merge := func() string { return "/trees/main@" + e.head("main") + "/history/merge" }
	body := func(mode map[string]any) map[string]any {
		mode["key"] = key{[]string{"db", "t"}}
		return map[string]any{"fromRefName": "dev", "fromHash": devHead, "keyMergeModes": []map[string]any{mode}}
	}

	// Without a resolution, db.t conflicts.
	e.fail(http.MethodPost, merge(), map[string]any{"fromRefName": "dev", "fromHash": devHead}, http.StatusConflict, "REFERENCE_CONFLICT")

	for name, mode := range map[string]map[string]any{
		"resolvedContent without expectedTargetContent": {"mergeBehavior": "NORMAL", "resolvedContent": resolved},
		"resolvedContent with FORCE":                    {"mergeBehavior": "FORCE", "expectedTargetContent": onMain, "resolvedContent": resolved},
		"resolvedContent with DROP":                     {"mergeBehavior": "DROP", "expectedTargetContent": onMain, "resolvedContent": resolved},
		"resolvedContent with another content id":       {"mergeBehavior": "NORMAL", "expectedTargetContent": onMain, "resolvedContent": otherID},
	} {
		t.Run(name, func(t *testing.T) {
			e.with(t).fail(http.MethodPost, merge(), body(mode), http.StatusBadRequest, "BAD_REQUEST")
		})
	}
	t.Run("transplant", func(t *testing.T) {
		e := e.with(t)
		b := body(map[string]any{"mergeBehavior": "NORMAL", "expectedTargetContent": onMain, "resolvedContent": resolved})
		b["hashesToTransplant"] = []string{devHead}
		e.fail(http.MethodPost, "/trees/main@"+e.head("main")+"/history/transplant", b, http.StatusBadRequest, "BAD_REQUEST")
	})

	t.Run("stale expected target", func(t *testing.T) {
		e := e.with(t)
		before := e.head("main")
		stale := upd("file:///w/t1.json", 1) // what main held before it changed
		ne := e.fail(http.MethodPost, merge(), body(map[string]any{"mergeBehavior": "NORMAL", "expectedTargetContent": stale, "resolvedContent": resolved}),
			http.StatusConflict, "REFERENCE_CONFLICT")
		if ne.ErrorDetails == nil || len(ne.ErrorDetails.Conflicts) != 1 || !slices.Equal(ne.ErrorDetails.Conflicts[0].Key.Elements, []string{"db", "t"}) {
			t.Errorf("conflict details %+v", ne.ErrorDetails)
		}
		// FORCE with an expected target value checks it too.
		e.fail(http.MethodPost, merge(), body(map[string]any{"mergeBehavior": "FORCE", "expectedTargetContent": stale}), http.StatusConflict, "REFERENCE_CONFLICT")
		if e.head("main") != before {
			t.Errorf("main moved")
		}
	})

	t.Run("dry run", func(t *testing.T) {
		e := e.with(t)
		before := e.head("main")
		b := body(map[string]any{"mergeBehavior": "NORMAL", "expectedTargetContent": onMain, "resolvedContent": resolved})
		b["dryRun"] = true
		var m mergeResp
		e.ok(http.MethodPost, merge(), b, http.StatusOK, &m)
		if !m.WasSuccessful || m.WasApplied || e.head("main") != before {
			t.Errorf("dry run %+v", m)
		}
	})

	t.Run("resolved", func(t *testing.T) {
		e := e.with(t)
		before := e.head("main")
		var m mergeResp
		e.ok(http.MethodPost, merge(), body(map[string]any{"mergeBehavior": "NORMAL", "expectedTargetContent": onMain, "resolvedContent": resolved}),
			http.StatusOK, &m)
		if !m.WasSuccessful || !m.WasApplied || m.ResultantTargetHash != e.head("main") {
			t.Fatalf("merge %+v", m)
		}
		e.ok(http.MethodGet, "/trees/main/contents/db.t", nil, http.StatusOK, &c)
		if c.Content.MetadataLocation != "file:///w/resolved.json" || *c.Content.SnapshotID != 4 || c.Content.ID != id {
			t.Errorf("db.t after the merge: %+v", c.Content)
		}
		e.ok(http.MethodGet, "/trees/main/contents/db.u", nil, http.StatusOK, &c)
		if c.Content.MetadataLocation != "file:///w/u.json" {
			t.Errorf("db.u after the merge: %+v", c.Content)
		}
		var l struct {
			LogEntries []struct {
				CommitMeta        struct{ ParentCommitHashes []string }
				AdditionalParents []string
			}
		}
		e.ok(http.MethodGet, "/trees/main/history?fetch=ALL&max-records=1", nil, http.StatusOK, &l)
		if got := l.LogEntries[0]; !slices.Equal(got.AdditionalParents, []string{devHead}) ||
			!slices.Equal(got.CommitMeta.ParentCommitHashes, []string{before, devHead}) {
			t.Errorf("merge commit %+v, want parents %s and %s", got, before, devHead)
		}
	})
}
