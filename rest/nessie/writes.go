package nessie

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	tableclass "github.com/floe-catalog/floe/merge/classify"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

type operationIn struct {
	Type            string          `json:"type"`
	Key             *keyJSON        `json:"key"`
	Content         *contentJSON    `json:"content"`
	ExpectedContent json.RawMessage `json:"expectedContent"`
}

type operationsIn struct {
	CommitMeta *commitMetaIn `json:"commitMeta"`
	Operations []operationIn `json:"operations"`
}

type addedContentJSON struct {
	Key       keyJSON `json:"key"`
	ContentID string  `json:"contentId"`
}

type commitResponse struct {
	TargetBranch  referenceJSON      `json:"targetBranch"`
	AddedContents []addedContentJSON `json:"addedContents,omitempty"`
}

// commit is POST /trees/{branch@hash}/history/commit.
func (a *api) commit(r *http.Request) (any, error) {
	branch, expected, err := a.writeTarget(r)
	if err != nil {
		return nil, err
	}
	var body operationsIn
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	if body.CommitMeta == nil {
		return nil, badRequest("commitMeta is required")
	}
	ops := make([]versionstore.Operation, 0, len(body.Operations))
	for i, o := range body.Operations {
		k, err := o.Key.key()
		if err != nil {
			return nil, badRequest("operation %d: %v", i, err)
		}
		op := versionstore.Operation{Key: k}
		switch o.Type {
		case "PUT":
			op.Kind = versionstore.OpPut
			if op.Content, err = o.Content.content(k); err != nil {
				return nil, err
			}
			if err := a.checkLocation(k, op.Content, fmt.Sprintf("operation %d", i)); err != nil {
				return nil, err
			}
		case "DELETE":
			op.Kind = versionstore.OpDelete
		case "UNCHANGED":
			op.Kind = versionstore.OpUnchanged
		default:
			return nil, badRequest("operation %d on %q has unknown type %q; use PUT, DELETE or UNCHANGED", i, k.String(), o.Type)
		}
		ops = append(ops, op)
	}
	if a.guard.Enabled() {
		contents, err := a.commitContents(r.Context(), expected, ops)
		if err != nil {
			return nil, err
		}
		if err := a.guard.Check(r, policy.Input{Action: policy.ActionCommit, Ref: a.storedRef(branch), Contents: contents}); err != nil {
			return nil, err
		}
	}
	res, err := a.store.Commit(r.Context(), versionstore.CommitRequest{
		Branch: branch, Expected: expected, Operations: ops,
		Meta: body.CommitMeta.meta(), Committer: a.principal(r),
	})
	if err != nil {
		return nil, err
	}
	resp := commitResponse{TargetBranch: referenceJSON{Type: typeBranch, Name: branch, Hash: res.Commit.Hash.String()}}
	for _, ad := range res.Added {
		resp.AddedContents = append(resp.AddedContents, addedContentJSON{Key: keyJSON{Elements: append([]string{}, ad.Key...)}, ContentID: ad.ID})
	}
	return resp, nil
}

type keyMergeModeIn struct {
	Key                   *keyJSON        `json:"key"`
	MergeBehavior         string          `json:"mergeBehavior"`
	ExpectedTargetContent json.RawMessage `json:"expectedTargetContent"`
	ResolvedContent       json.RawMessage `json:"resolvedContent"`
}

// mergeIn is the union of Merge and Transplant.
type mergeIn struct {
	FromRefName            string           `json:"fromRefName"`
	FromHash               string           `json:"fromHash"`
	HashesToTransplant     []string         `json:"hashesToTransplant"`
	Message                string           `json:"message"`
	CommitMeta             *commitMetaIn    `json:"commitMeta"`
	KeyMergeModes          []keyMergeModeIn `json:"keyMergeModes"`
	DefaultKeyMergeMode    string           `json:"defaultKeyMergeMode"`
	DryRun                 bool             `json:"dryRun"`
	FetchAdditionalInfo    bool             `json:"fetchAdditionalInfo"`
	ReturnConflictAsResult bool             `json:"returnConflictAsResult"`
}

// modes translates the merge modes. target, for merges, turns a key's
// expectedTargetContent into the value the store must find on the target;
// nil refuses expectedTargetContent and resolvedContent, as Nessie does for
// transplants, which replay commits one by one.
//
// As in Nessie, resolvedContent needs expectedTargetContent and the NORMAL
// behavior; expectedTargetContent with FORCE or DROP still makes the merge
// check the target's value.
func (m *mergeIn) modes(target func(versionstore.ContentKey, *versionstore.Content) (*versionstore.Content, error)) (versionstore.MergeBehavior, []versionstore.KeyMergeMode, error) {
	def := versionstore.MergeBehavior(m.DefaultKeyMergeMode)
	var modes []versionstore.KeyMergeMode
	for i, km := range m.KeyMergeModes {
		k, err := km.Key.key()
		if err != nil {
			return "", nil, badRequest("keyMergeModes[%d]: %v", i, err)
		}
		b := versionstore.MergeBehavior(km.MergeBehavior)
		if b == "" {
			b = versionstore.MergeNormal
		}
		mode := versionstore.KeyMergeMode{Key: k, Behavior: b}
		expected, resolved := isSet(km.ExpectedTargetContent), isSet(km.ResolvedContent)
		switch {
		case (expected || resolved) && target == nil:
			return "", nil, badRequest("keyMergeModes[%d] for %q: expectedTargetContent and resolvedContent are only supported for squashing merge operations", i, k.String())
		case resolved && b != versionstore.MergeNormal:
			return "", nil, badRequest("keyMergeModes[%d]: resolvedContent must be null for MergeBehavior.%s for %s", i, b, k.String())
		case resolved && !expected:
			return "", nil, badRequest("keyMergeModes[%d]: resolvedContent requires setting expectedTargetContent as well for key %s", i, k.String())
		}
		if expected {
			c, err := rawContent(km.ExpectedTargetContent, k, "expectedTargetContent")
			if err != nil {
				return "", nil, err
			}
			if mode.ExpectedTarget, err = target(k, c); err != nil {
				return "", nil, err
			}
		}
		if resolved {
			if mode.Resolved, err = rawContent(km.ResolvedContent, k, "resolvedContent"); err != nil {
				return "", nil, err
			}
		}
		modes = append(modes, mode)
	}
	return def, modes, nil
}

// checkLocation refuses Iceberg content whose metadata location lies
// outside the locations the server accepts (Deps.Locations).
func (a *api) checkLocation(k versionstore.ContentKey, c *versionstore.Content, where string) error {
	if a.locations == nil || c == nil || (c.Type != versionstore.IcebergTable && c.Type != versionstore.IcebergView) {
		return nil
	}
	if _, err := a.locations.Contains(c.MetadataLocation); err != nil {
		return badRequest("%s: metadataLocation %q of %q is refused: %v; a table's or view's metadata file must lie inside a warehouse of this server", where, c.MetadataLocation, k.String(), err)
	}
	return nil
}

// checkResolvedLocations applies checkLocation to a merge's resolved
// contents, which enter the target as sent.
func (a *api) checkResolvedLocations(modes []versionstore.KeyMergeMode) error {
	for i, m := range modes {
		if err := a.checkLocation(m.Key, m.Resolved, fmt.Sprintf("keyMergeModes[%d] resolvedContent", i)); err != nil {
			return err
		}
	}
	return nil
}

// rawContent decodes a content object given inside a merge mode.
func rawContent(raw json.RawMessage, k versionstore.ContentKey, field string) (*versionstore.Content, error) {
	var j contentJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, badRequest("%s for %q: %v", field, k.String(), err)
	}
	return j.content(k)
}

// expectedTarget turns the expectedTargetContent a client sent for key into
// the stored value the merge must find on branch. A client sees content
// through Nessie's fields, which leave some stored ones out, so if the
// branch's head holds content that looks the same it stands for the stored
// value, which the store then requires, exactly, when it writes the merge:
// a change in between is a conflict. Content that looks different is
// passed as sent, which the store reports as a conflict.
func (a *api) expectedTarget(ctx context.Context, branch string) func(versionstore.ContentKey, *versionstore.Content) (*versionstore.Content, error) {
	return func(k versionstore.ContentKey, sent *versionstore.Content) (*versionstore.Content, error) {
		ref, err := a.store.GetRef(branch)
		if err != nil {
			return nil, err
		}
		cur, err := a.store.GetContent(ctx, ref.Head, k)
		switch {
		case errors.Is(err, versionstore.ErrContentNotFound):
			return sent, nil
		case err != nil:
			return nil, err
		}
		if reflect.DeepEqual(toContentJSON(k, cur), toContentJSON(k, sent)) {
			return cur, nil
		}
		return sent, nil
	}
}

func isSet(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null"
}

type contentKeyDetailsJSON struct {
	Key           keyJSON       `json:"key"`
	MergeBehavior string        `json:"mergeBehavior"`
	Conflict      *conflictJSON `json:"conflict,omitempty"`
	// FloeClassification is floe's classification of the table, given
	// only to clients that ask for it (classification.go).
	FloeClassification *tableclass.Table `json:"floeClassification,omitempty"`
	// FloeMerge is what the merge does with the table, given with
	// FloeClassification when the merge engine decided on the table.
	FloeMerge *floeMergeJSON `json:"floeMerge,omitempty"`
}

type mergeResponse struct {
	WasApplied          bool                    `json:"wasApplied"`
	WasSuccessful       bool                    `json:"wasSuccessful"`
	ResultantTargetHash string                  `json:"resultantTargetHash,omitempty"`
	CommonAncestor      string                  `json:"commonAncestor,omitempty"`
	TargetBranch        string                  `json:"targetBranch"`
	EffectiveTargetHash string                  `json:"effectiveTargetHash"`
	ExpectedHash        string                  `json:"expectedHash,omitempty"`
	Details             []contentKeyDetailsJSON `json:"details"`
}

func toMergeResponse(branch string, res *versionstore.MergeResult) mergeResponse {
	out := mergeResponse{
		WasApplied: res.WasApplied, WasSuccessful: res.WasSuccessful, TargetBranch: branch,
		ResultantTargetHash: res.ResultantHash.String(), EffectiveTargetHash: res.EffectiveTargetHash.String(),
		Details: []contentKeyDetailsJSON{},
	}
	if res.CommonAncestor != (versionstore.Hash{}) {
		out.CommonAncestor = res.CommonAncestor.String()
	}
	if res.ExpectedHash != (versionstore.Hash{}) {
		out.ExpectedHash = res.ExpectedHash.String()
	}
	for _, d := range res.Details {
		j := contentKeyDetailsJSON{Key: keyJSON{Elements: append([]string{}, d.Key...)}, MergeBehavior: string(d.Behavior)}
		if d.Conflict != nil {
			c := conflictToJSON(*d.Conflict)
			j.Conflict = &c
		}
		out.Details = append(out.Details, j)
	}
	return out
}

// mergeOutcome turns a merge or transplant result into the response: a
// conflict is 409 with its details, or, with returnConflictAsResult, a 200
// whose wasSuccessful is false.
func mergeOutcome(branch string, in *mergeIn, res *versionstore.MergeResult, err error) (any, error) {
	var ce *versionstore.ConflictError
	if err != nil && errors.As(err, &ce) && res != nil && in.ReturnConflictAsResult {
		return toMergeResponse(branch, res), nil
	}
	if err != nil {
		return nil, err
	}
	return toMergeResponse(branch, res), nil
}

// mergeSource resolves fromRefName plus fromHash (absolute or relative).
func (a *api) mergeSource(ctx context.Context, name, hash string) (versionstore.Hash, error) {
	if hash == "" {
		return versionstore.Hash{}, badRequest("fromHash must be provided")
	}
	expr := name
	if !strings.ContainsAny(hash[:1], "~^*") {
		expr += "@"
	}
	res, err := a.store.Resolve(ctx, expr+hash)
	if err != nil {
		return versionstore.Hash{}, err
	}
	return res.Hash, nil
}

// merge is POST /trees/{branch@hash}/history/merge.
func (a *api) merge(r *http.Request) (any, error) {
	branch, expected, err := a.writeTarget(r)
	if err != nil {
		return nil, err
	}
	var body mergeIn
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	def, modes, err := body.modes(a.expectedTarget(r.Context(), branch))
	if err != nil {
		return nil, err
	}
	if err := a.checkResolvedLocations(modes); err != nil {
		return nil, err
	}
	from, err := a.mergeSource(r.Context(), body.FromRefName, body.FromHash)
	if err != nil {
		return nil, err
	}
	meta := body.CommitMeta.meta()
	if meta.Message == "" {
		meta.Message = body.Message
	}
	req := versionstore.MergeRequest{
		Target: branch, ExpectedTarget: expected, From: from, FromRef: body.FromRefName,
		DefaultMode: def, KeyModes: modes, DryRun: true, Meta: meta, Committer: a.principal(r),
		Check: a.mergeCheck(r, policy.ActionMerge, a.storedRef(body.FromRefName), branch),
	}
	if len(modes) > 0 {
		// Nessie refuses key merge modes for keys the merge does not
		// touch; a dry run tells which keys it touches.
		res, err := a.store.Merge(r.Context(), req)
		if err := unusedModes(modes, res, err); err != nil {
			return nil, err
		}
	}
	req.DryRun = body.DryRun
	var res *versionstore.MergeResult
	var outcomes []TableOutcome
	if a.merger == nil {
		res, err = a.store.Merge(r.Context(), req)
	} else {
		// Dry runs too: a dry run reports what the merge would do.
		res, outcomes, err = a.merger.MergeTables(r.Context(), req)
	}
	var tables map[string]*tableclass.Table
	if body.DryRun && !decided(outcomes) {
		// No table was decided by the engine (there is none, or a
		// conflict it does not resolve fails the merge): classify the
		// conflicting tables for the report.
		tables = a.classifyConflicts(r.Context(), from, res, err)
	}
	out, err := mergeOutcome(branch, &body, res, err)
	if mr, ok := out.(mergeResponse); ok && wantsClassification(r) {
		mr.attach(tables)
		mr.attachOutcomes(outcomes)
	}
	return out, err
}

// transplant is POST /trees/{branch@hash}/history/transplant.
func (a *api) transplant(r *http.Request) (any, error) {
	branch, expected, err := a.writeTarget(r)
	if err != nil {
		return nil, err
	}
	var body mergeIn
	if err := decodeBody(r, &body); err != nil {
		return nil, err
	}
	def, modes, err := body.modes(nil)
	if err != nil {
		return nil, err
	}
	if len(body.HashesToTransplant) == 0 {
		return nil, badRequest("hashesToTransplant must name at least one commit")
	}
	commits := make([]versionstore.Hash, 0, len(body.HashesToTransplant))
	for _, h := range body.HashesToTransplant {
		c, err := a.mergeSource(r.Context(), body.FromRefName, h)
		if err != nil {
			return nil, err
		}
		commits = append(commits, c)
	}
	req := versionstore.TransplantRequest{
		Target: branch, ExpectedTarget: expected, Commits: commits, FromRef: body.FromRefName,
		DefaultMode: def, KeyModes: modes, DryRun: true, Committer: a.principal(r),
		Check: a.mergeCheck(r, policy.ActionTransplant, a.storedRef(body.FromRefName), branch),
	}
	if len(modes) > 0 {
		res, err := a.store.Transplant(r.Context(), req)
		if err := unusedModes(modes, res, err); err != nil {
			return nil, err
		}
	}
	req.DryRun = body.DryRun
	var res *versionstore.MergeResult
	var outcomes []TableOutcome
	if a.merger == nil {
		res, err = a.store.Transplant(r.Context(), req)
	} else {
		res, outcomes, err = a.merger.TransplantTables(r.Context(), req)
	}
	out, err := mergeOutcome(branch, &body, res, err)
	if mr, ok := out.(mergeResponse); ok && wantsClassification(r) {
		mr.attachOutcomes(outcomes)
	}
	return out, err
}

// unusedModes checks a dry run's outcome: every key given a merge mode
// must be one the merge touches. Errors other than conflicts are returned
// as they are; conflicts are left for the real run to report.
func unusedModes(modes []versionstore.KeyMergeMode, res *versionstore.MergeResult, err error) error {
	var ce *versionstore.ConflictError
	if err != nil && !errors.As(err, &ce) {
		return err
	}
	if res == nil {
		return nil
	}
	touched := map[string]bool{}
	for _, d := range res.Details {
		touched[string(d.Key.Encode())] = true
	}
	var unused []string
	for _, m := range modes {
		if !touched[string(m.Key.Encode())] {
			unused = append(unused, m.Key.String())
		}
	}
	if len(unused) > 0 {
		return badRequest("Not all merge key behaviors specified in the request have been used. The following keys were not used: %v", unused)
	}
	return nil
}
