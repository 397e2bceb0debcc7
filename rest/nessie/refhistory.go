package nessie

import (
	"net/http"
	"strconv"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/versionstore"
)

// maxRecentChanges bounds the previous heads recent-changes reports, as
// Nessie keeps a short history of each reference's head.
const maxRecentChanges = 20

// maxScanCommits bounds the scan-commits consistency check.
const maxScanCommits = 1000

type referenceHistoryState struct {
	CommitHash        string          `json:"commitHash"`
	CommitConsistency string          `json:"commitConsistency"`
	Meta              *commitMetaJSON `json:"meta,omitempty"`
}

type referenceHistoryResponse struct {
	Reference            referenceJSON           `json:"reference"`
	Current              referenceHistoryState   `json:"current"`
	Previous             []referenceHistoryState `json:"previous"`
	CommitLogConsistency string                  `json:"commitLogConsistency"`
}

// recentChanges is GET /trees/{ref}/recent-changes: the reference's head
// and its previous heads, newest first, from the reference log, each with
// whether its commit is readable. scan-commits=N also checks that the
// first N commits of the current head's log are readable.
func (a *api) recentChanges(r *http.Request) (any, error) {
	name, err := pathVar(r, "ref")
	if err != nil {
		return nil, err
	}
	if name == "-" {
		name = versionstore.DefaultBranch
	}
	if err := versionstore.ValidateRefName(name); err != nil {
		return nil, err
	}
	scan := 0
	if s := r.URL.Query().Get("scan-commits"); s != "" {
		if scan, err = strconv.Atoi(s); err != nil || scan < 0 {
			return nil, badRequest("scan-commits must be a non-negative integer, got %q", s)
		}
		scan = min(scan, maxScanCommits)
	}
	ref, err := a.store.GetRef(name)
	if err != nil {
		return nil, err
	}
	if err := a.guard.Read(r, policy.Ref{Name: ref.Name, Type: authz.RefType(ref.Type)}); err != nil {
		return nil, err
	}
	state := func(h versionstore.Hash) referenceHistoryState {
		st := referenceHistoryState{CommitHash: h.String(), CommitConsistency: "COMMIT_CONSISTENT"}
		if h == versionstore.NoAncestor {
			return st
		}
		c, err := a.store.ReadCommit(r.Context(), h)
		if err != nil {
			st.CommitConsistency = "COMMIT_INCONSISTENT"
			return st
		}
		st.Meta = commitMeta(c)
		return st
	}
	resp := referenceHistoryResponse{Reference: refJSON(ref), Current: state(ref.Head), Previous: []referenceHistoryState{}, CommitLogConsistency: "NOT_CHECKED"}
	moves, _, err := a.store.RefLog(r.Context(), name, maxRecentChanges+1, "")
	if err != nil {
		return nil, err
	}
	for _, m := range moves {
		// Entries since the ref was last (re)created; older ones belong
		// to a deleted reference of the same name.
		if m.Op == versionstore.RefLogCreate || m.Op == versionstore.RefLogDelete {
			break
		}
		if len(resp.Previous) == maxRecentChanges {
			break
		}
		if m.From != (versionstore.Hash{}) {
			resp.Previous = append(resp.Previous, state(m.From))
		}
	}
	if scan > 0 {
		resp.CommitLogConsistency = "COMMIT_CONSISTENT"
		if _, _, err := a.store.Log(r.Context(), ref.Head, versionstore.LogOptions{Limit: scan}); err != nil {
			resp.CommitLogConsistency = "COMMIT_INCONSISTENT"
		}
	}
	return resp, nil
}

type repositoryConfigResponse struct {
	Configs []struct{} `json:"configs"`
}

// getRepositoryConfig is GET /config/repository: floe keeps no repository
// configs (such as Nessie's garbage-collector config), so the answer is
// always an empty list.
func (a *api) getRepositoryConfig(*http.Request) (any, error) {
	return repositoryConfigResponse{Configs: []struct{}{}}, nil
}
