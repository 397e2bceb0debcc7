package versionstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// MergeBehavior says how a merge or transplant treats one key.
type MergeBehavior string

// Merge behaviors, as Nessie names them.
const (
	// MergeNormal applies the source's change unless the target changed
	// the key too, which is a conflict.
	MergeNormal MergeBehavior = "NORMAL"
	// MergeForce applies the source's change regardless of the target.
	MergeForce MergeBehavior = "FORCE"
	// MergeDrop leaves the key as the target has it.
	MergeDrop MergeBehavior = "DROP"
)

// KeyMergeMode sets the behavior for one key.
type KeyMergeMode struct {
	Key      ContentKey
	Behavior MergeBehavior
}

// MergeRequest merges the changes of From since its merge base with the
// target into the target branch, as one commit with two parents.
type MergeRequest struct {
	Target string
	// ExpectedTarget must be the target's head or one of its ancestors;
	// conflicts are judged against the current head.
	ExpectedTarget Hash
	From           Hash
	FromRef        string // recorded in the commit; optional
	DefaultMode    MergeBehavior
	KeyModes       []KeyMergeMode
	DryRun         bool
	Meta           CommitMeta
	Committer      string
	// Check, if set, vets the changes before anything is written.
	Check WriteCheck
}

// TransplantRequest replays commits, in order, onto the target branch, one
// new commit per source commit that still changes something.
type TransplantRequest struct {
	Target         string
	ExpectedTarget Hash
	Commits        []Hash
	FromRef        string
	DefaultMode    MergeBehavior
	KeyModes       []KeyMergeMode
	DryRun         bool
	Committer      string
	// Check, if set, vets the changes of all the replayed commits
	// together before anything is written.
	Check WriteCheck
}

// WriteCheck vets the changes a merge or transplant is about to make on
// its target, computed against the target's current head inside the
// write, so what it approves is exactly what is written. An error cancels
// the whole operation, dry runs included, and is returned as is. The
// contents are the store's own: read them, never modify them.
type WriteCheck func(ctx context.Context, changes []CheckedChange) error

// CheckedChange is one key a merge or transplant would change on its
// target.
type CheckedChange struct {
	Key  ContentKey
	Kind OperationKind // OpPut or OpDelete
	// Before is the target's value ahead of the operation, nil if it had
	// none; After is the value written, nil for a delete.
	Before, After *Content
}

// KeyDetail reports what a merge or transplant did with one key.
type KeyDetail struct {
	Key      ContentKey
	Behavior MergeBehavior
	Conflict *Conflict // nil: applied, or nothing to do
}

// MergeResult is the outcome of a merge or transplant. When conflicts
// prevent it, the method returns both the result (WasSuccessful false,
// with the details) and a *ConflictError.
type MergeResult struct {
	WasApplied    bool // a commit was written
	WasSuccessful bool // no conflicts
	// ResultantHash is the target's head afterwards (unchanged unless
	// applied).
	ResultantHash Hash
	// CommonAncestor is the merge base; zero for transplants.
	CommonAncestor Hash
	// EffectiveTargetHash is the head the changes were applied onto.
	EffectiveTargetHash Hash
	ExpectedHash        Hash
	Details             []KeyDetail
	// Commits are the commits written, oldest first.
	Commits []*Commit
}

type mergeModes struct {
	def   MergeBehavior
	byKey map[string]MergeBehavior
}

func newMergeModes(def MergeBehavior, keys []KeyMergeMode) (mergeModes, error) {
	if def == "" {
		def = MergeNormal
	}
	m := mergeModes{def: def, byKey: map[string]MergeBehavior{}}
	if err := validBehavior(def); err != nil {
		return m, err
	}
	for _, km := range keys {
		if err := km.Key.Validate(); err != nil {
			return m, err
		}
		if err := validBehavior(km.Behavior); err != nil {
			return m, err
		}
		k := string(km.Key.Encode())
		if _, dup := m.byKey[k]; dup {
			return m, fmt.Errorf("%w: merge mode for %q given twice", ErrInvalid, km.Key.String())
		}
		m.byKey[k] = km.Behavior
	}
	return m, nil
}

func validBehavior(b MergeBehavior) error {
	switch b {
	case MergeNormal, MergeForce, MergeDrop:
		return nil
	}
	return fmt.Errorf("%w: unknown merge behavior %q", ErrInvalid, b)
}

func (m mergeModes) of(key []byte) MergeBehavior {
	if b, ok := m.byKey[string(key)]; ok {
		return b
	}
	return m.def
}

// keyChange is one key's change on the source side: from base to source.
type keyChange struct {
	key          []byte
	base, source Hash
	baseOK       bool
	sourceOK     bool
}

// Merge merges a commit into a branch.
func (s *Store) Merge(ctx context.Context, req MergeRequest) (*MergeResult, error) {
	if err := ValidateRefName(req.Target); err != nil {
		return nil, err
	}
	modes, err := newMergeModes(req.DefaultMode, req.KeyModes)
	if err != nil {
		return nil, err
	}
	if _, err := s.commit(ctx, req.From); err != nil {
		return nil, fmt.Errorf("merge source: %w", err)
	}
	res, err := s.write(ctx, req.Target, func(ctx context.Context, t *refTxn) (any, error) {
		return t.merge(ctx, req, modes)
	})
	return mergeOutcome(res, err)
}

func mergeOutcome(res any, err error) (*MergeResult, error) {
	if r, ok := res.(*MergeResult); ok {
		return r, err
	}
	return nil, err
}

// conflictResult carries a failed merge's result out of a round, which
// otherwise only reports the error.
type conflictResult struct {
	*ConflictError
	result *MergeResult
}

func (t *refTxn) merge(ctx context.Context, req MergeRequest, modes mergeModes) (*MergeResult, error) {
	ref, err := t.branch()
	if err != nil {
		return nil, err
	}
	if _, err := t.checkExpected(ctx, req.ExpectedTarget); err != nil {
		return nil, err
	}
	head, err := t.loadHead(ctx, ref.Head)
	if err != nil {
		return nil, err
	}
	base, err := mergeBase(ctx, t.ov, ref.Head, req.From)
	if err != nil {
		return nil, err
	}
	res := &MergeResult{CommonAncestor: base, EffectiveTargetHash: ref.Head, ExpectedHash: req.ExpectedTarget, ResultantHash: ref.Head}
	if base == req.From {
		res.WasSuccessful = true // already merged: nothing to do
		return res, nil
	}
	baseCommit, err := t.ov.commit(ctx, base)
	if err != nil {
		return nil, err
	}
	from, err := t.ov.commit(ctx, req.From)
	if err != nil {
		return nil, err
	}
	trees, err := t.s.bothTrees(ctx, baseCommit, from, t.ov)
	if err != nil {
		return nil, err
	}
	var changes []keyChange
	err = diffTrees(ctx, trees, baseCommit.Tree, from.Tree, nil, nil, func(k []byte, bv Hash, bok bool, sv Hash, sok bool) bool {
		changes = append(changes, keyChange{key: bytes.Clone(k), base: bv, baseOK: bok, source: sv, sourceOK: sok})
		return true
	})
	if err != nil {
		return nil, err
	}
	ops, details, conflicts, err := t.resolveChanges(ctx, head.Tree, changes, modes)
	if err != nil {
		return nil, err
	}
	res.Details = details
	if len(conflicts) > 0 {
		return nil, &conflictResult{ConflictError: &ConflictError{Ref: t.name, Conflicts: conflicts}, result: res}
	}
	if len(ops) == 0 {
		res.WasSuccessful = true
		return res, nil // everything dropped or already present
	}
	if err := t.runCheck(ctx, req.Check, ref.Head, ops); err != nil {
		return nil, err
	}
	c, err := t.applyOps(ctx, head, ops, req.Meta, req.Committer, defaultMergeMessage(req), req.From)
	if err != nil {
		return nil, withResult(err, res)
	}
	res.WasSuccessful = true
	if req.DryRun {
		return res, errDryRun
	}
	t.move(c.Hash, RefLogMerge, req.Committer)
	t.commits++
	res.WasApplied = true
	res.ResultantHash = c.Hash
	res.Commits = []*Commit{c.clone()}
	return res, nil
}

func defaultMergeMessage(req MergeRequest) string {
	if req.Meta.Message != "" {
		return req.Meta.Message
	}
	if req.FromRef != "" {
		return fmt.Sprintf("Merge %s at %s into %s", req.FromRef, req.From, req.Target)
	}
	return fmt.Sprintf("Merge %s into %s", req.From, req.Target)
}

// resolveChanges decides, for each source change, what to write on the
// target, by the key's merge behavior and the target's current value.
func (t *refTxn) resolveChanges(ctx context.Context, targetTree Hash, changes []keyChange, modes mergeModes) ([]CommitOp, []KeyDetail, []Conflict, error) {
	var (
		ops       []CommitOp
		details   []KeyDetail
		conflicts []Conflict
	)
	for _, ch := range changes {
		key, err := DecodeKey(ch.key)
		if err != nil {
			return nil, nil, nil, err
		}
		behavior := modes.of(ch.key)
		detail := KeyDetail{Key: key, Behavior: behavior}
		if behavior == MergeDrop {
			details = append(details, detail)
			continue
		}
		tv, tok, err := lookup(ctx, t.ov, targetTree, ch.key)
		if err != nil {
			return nil, nil, nil, err
		}
		if tv == ch.source && tok == ch.sourceOK {
			details = append(details, detail) // the target already has it
			continue
		}
		if behavior == MergeNormal && (tv != ch.base || tok != ch.baseOK) {
			c, err := t.conflictFor(ctx, key, ch.base, ch.baseOK, tv, tok)
			if err != nil {
				return nil, nil, nil, err
			}
			c.Message = fmt.Sprintf("key %q changed on both sides: %s", key.String(), c.Message)
			detail.Conflict = &c
			details = append(details, detail)
			conflicts = append(conflicts, c)
			continue
		}
		details = append(details, detail)
		if ch.sourceOK {
			ops = append(ops, CommitOp{Kind: OpPut, Key: key, Value: ch.source})
		} else if tok {
			ops = append(ops, CommitOp{Kind: OpDelete, Key: key})
		}
	}
	return ops, details, conflicts, nil
}

// applyOps writes ops onto head as a new commit, after checking namespaces.
func (t *refTxn) applyOps(ctx context.Context, head *Commit, ops []CommitOp, meta CommitMeta, committer, message string, extraParents ...Hash) (*Commit, error) {
	tree, err := editTree(ctx, t.ov, head.Tree, opsToMutations(ops))
	if err != nil {
		return nil, err
	}
	conflicts, err := t.checkNamespaces(ctx, head.Tree, tree, ops)
	if err != nil {
		return nil, err
	}
	if len(conflicts) > 0 {
		return nil, &ConflictError{Ref: t.name, Conflicts: conflicts}
	}
	meta.Message = message
	return t.newCommit(head, tree, meta, committer, ops, extraParents...), nil
}

// withResult attaches a merge result to a conflict found while applying
// the merged changes (namespace rules), so callers get the result as they
// do for key conflicts.
func withResult(err error, res *MergeResult) error {
	var ce *ConflictError
	if errors.As(err, &ce) {
		return &conflictResult{ConflictError: ce, result: res}
	}
	return err
}

// errDryRun makes a dry run's round discard its changes while the result
// still reaches the caller.
var errDryRun = fmt.Errorf("dry run")

// Transplant replays commits onto a branch.
func (s *Store) Transplant(ctx context.Context, req TransplantRequest) (*MergeResult, error) {
	if err := ValidateRefName(req.Target); err != nil {
		return nil, err
	}
	if len(req.Commits) == 0 {
		return nil, fmt.Errorf("%w: transplant needs at least one commit", ErrInvalid)
	}
	modes, err := newMergeModes(req.DefaultMode, req.KeyModes)
	if err != nil {
		return nil, err
	}
	for _, h := range req.Commits {
		if h == NoAncestor {
			return nil, fmt.Errorf("%w: cannot transplant the root", ErrInvalid)
		}
		if _, err := s.commit(ctx, h); err != nil {
			return nil, fmt.Errorf("transplant source: %w", err)
		}
	}
	res, err := s.write(ctx, req.Target, func(ctx context.Context, t *refTxn) (any, error) {
		return t.transplant(ctx, req, modes)
	})
	return mergeOutcome(res, err)
}

func (t *refTxn) transplant(ctx context.Context, req TransplantRequest, modes mergeModes) (*MergeResult, error) {
	ref, err := t.branch()
	if err != nil {
		return nil, err
	}
	if _, err := t.checkExpected(ctx, req.ExpectedTarget); err != nil {
		return nil, err
	}
	head, err := t.loadHead(ctx, ref.Head)
	if err != nil {
		return nil, err
	}
	res := &MergeResult{EffectiveTargetHash: ref.Head, ExpectedHash: req.ExpectedTarget, ResultantHash: ref.Head}
	var conflicts []Conflict
	var written []*Commit
	var allOps []CommitOp
	for _, h := range req.Commits {
		src, err := t.ov.commit(ctx, h)
		if err != nil {
			return nil, err
		}
		parent, err := t.ov.commit(ctx, src.Parent())
		if err != nil {
			return nil, err
		}
		parentTree, err := t.s.treeSource(ctx, parent, t.ov)
		if err != nil {
			return nil, err
		}
		// The source commit's own change of each key: from its value at
		// the source's parent to the value the commit wrote.
		changes := make([]keyChange, 0, len(src.Operations))
		for _, op := range src.Operations {
			k := op.Key.Encode()
			pv, pok, err := lookup(ctx, parentTree, parent.Tree, k)
			if err != nil {
				return nil, err
			}
			changes = append(changes, keyChange{key: k, base: pv, baseOK: pok, source: op.Value, sourceOK: op.Kind == OpPut})
		}
		ops, details, cs, err := t.resolveChanges(ctx, head.Tree, changes, modes)
		if err != nil {
			return nil, err
		}
		res.Details = append(res.Details, details...)
		if len(cs) > 0 {
			conflicts = append(conflicts, cs...)
			continue
		}
		if len(conflicts) > 0 || len(ops) == 0 {
			continue // keep collecting conflicts; skip empty replays
		}
		meta := CommitMeta{Author: src.Author, AuthorTime: src.AuthorTime, Properties: src.Properties}
		c, err := t.applyOps(ctx, head, ops, meta, req.Committer, src.Message)
		if err != nil {
			return nil, withResult(err, res)
		}
		written = append(written, c)
		allOps = append(allOps, ops...)
		head = c
	}
	if len(conflicts) > 0 {
		return nil, &conflictResult{ConflictError: &ConflictError{Ref: t.name, Conflicts: conflicts}, result: res}
	}
	res.WasSuccessful = true
	if len(written) == 0 {
		return res, nil
	}
	if err := t.runCheck(ctx, req.Check, ref.Head, allOps); err != nil {
		return nil, err
	}
	if req.DryRun {
		return res, errDryRun
	}
	for _, c := range written {
		t.move(c.Hash, RefLogTransplant, req.Committer)
		res.Commits = append(res.Commits, c.clone())
	}
	t.commits += len(written)
	res.WasApplied = true
	res.ResultantHash = head.Hash
	return res, nil
}

// runCheck describes ops, applied in order onto the commit at, to check:
// one change per key, from the key's value at `at` to its last value.
func (t *refTxn) runCheck(ctx context.Context, check WriteCheck, at Hash, ops []CommitOp) error {
	if check == nil {
		return nil
	}
	c, err := t.ov.commit(ctx, at)
	if err != nil {
		return err
	}
	tree, err := t.s.treeSource(ctx, c, t.ov)
	if err != nil {
		return err
	}
	last := make(map[string]int, len(ops))
	var changes []CheckedChange
	for _, op := range ops {
		k := op.Key.Encode()
		i, seen := last[string(k)]
		if !seen {
			before, err := t.contentAt(ctx, tree, c.Tree, k)
			if err != nil {
				return err
			}
			i = len(changes)
			last[string(k)] = i
			changes = append(changes, CheckedChange{Key: op.Key, Before: before})
		}
		changes[i].Kind, changes[i].After = op.Kind, nil
		if op.Kind == OpPut {
			after, err := t.ov.content(ctx, op.Value)
			if err != nil {
				return err
			}
			changes[i].After = after
		}
	}
	return check(ctx, changes)
}

// contentAt is the content of key in the tree at root, nil when absent.
func (t *refTxn) contentAt(ctx context.Context, src nodeSource, root Hash, key []byte) (*Content, error) {
	v, ok, err := lookup(ctx, src, root, key)
	if err != nil || !ok {
		return nil, err
	}
	return t.ov.content(ctx, v)
}
