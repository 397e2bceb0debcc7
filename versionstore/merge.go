package versionstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
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
	// ExpectedTarget, if set, is the value the caller found for the key on
	// the target and based its decision on. The key then conflicts unless
	// the target holds exactly this value (the same content hash) when the
	// merge commit is made, in place of the usual rule that the target
	// still holds the merge base's value. With FORCE or DROP it adds that
	// check to a behavior that otherwise checks nothing. In a transplant it
	// is what the target must hold when a replayed commit changes the key:
	// give it only for a key one of the commits changes.
	ExpectedTarget *Content
	// Resolved, if set, is written for the key instead of the source's
	// value: the caller's resolution of a key changed on both sides,
	// computed above the store (Nessie's resolvedContent). It needs
	// ExpectedTarget, which is what makes it safe: the store writes it only
	// if the target still holds what the caller resolved against, and the
	// source is a commit, which cannot change. Only with NORMAL and only
	// for a key the source puts (in a transplant, that one of the commits
	// puts: it is written in that commit's replay). It keeps the target's
	// content id and type; an empty ID takes the target's.
	Resolved *Content
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
	// Record, if set, is stored in the same durable batch as the merge
	// commit, and only if that commit is written (WasApplied): never for a
	// dry run, a conflict, a refused check, or a merge with nothing to
	// write. A conditional record (Record.If) whose condition fails fails
	// the merge with ErrRecordConflict.
	Record *Record
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
	// Record, if set, is stored in the same durable batch as the replayed
	// commits, and only if they are written, as MergeRequest.Record.
	Record *Record
	// ReplayProperties, by a transplanted commit's hash, are properties
	// its replay carries besides the commit's own (the merge engine's
	// record of the tables it resolved in that replay); they win over the
	// commit's own properties of the same name.
	ReplayProperties map[Hash]map[string]string
}

// WriteCheck vets the changes a merge or transplant is about to make on
// its target. It runs on the caller's goroutine, never on the branch's
// committer, so a slow check (a policy evaluation, a decision log write)
// delays only its own merge. What it approves is exactly what is written:
// the store computes the merge on the target's head, asks the check, and
// then commits only if the keys the merge reads still hold the values it
// was computed on; otherwise it computes the merge again on the new head
// and asks the check again, a bounded number of times. An error cancels
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
	byKey map[string]keyMode
}

// keyMode is one key's KeyMergeMode, prepared.
type keyMode struct {
	behavior MergeBehavior
	// expected is the content hash the target must hold, if expect;
	// expectedPut is that content, which conflict messages read.
	expected    Hash
	expect      bool
	expectedPut *preparedPut
	resolved    *preparedPut
}

// newMergeModes checks and prepares the merge modes. resolving says
// whether ExpectedTarget and Resolved are allowed.
func newMergeModes(def MergeBehavior, keys []KeyMergeMode, resolving bool) (mergeModes, error) {
	if def == "" {
		def = MergeNormal
	}
	m := mergeModes{def: def, byKey: map[string]keyMode{}}
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
		mode, err := prepareKeyMode(km, resolving)
		if err != nil {
			return m, err
		}
		m.byKey[k] = mode
	}
	return m, nil
}

func prepareKeyMode(km KeyMergeMode, resolving bool) (keyMode, error) {
	mode := keyMode{behavior: km.Behavior}
	name := km.Key.String()
	if !resolving && (km.ExpectedTarget != nil || km.Resolved != nil) {
		return mode, fmt.Errorf("%w: merge mode for %q: an expected target value and resolved content are only supported by merges", ErrInvalid, name)
	}
	if e := km.ExpectedTarget; e != nil {
		if err := e.validate(); err != nil {
			return mode, fmt.Errorf("expected target value of %q: %w", name, err)
		}
		c := e.Clone()
		data := encodeContent(c)
		mode.expectedPut = &preparedPut{content: c, data: data, hash: hashOf(data)}
		mode.expect, mode.expected = true, mode.expectedPut.hash
	}
	r := km.Resolved
	if r == nil {
		return mode, nil
	}
	switch {
	case km.Behavior != MergeNormal:
		return mode, fmt.Errorf("%w: merge mode for %q: resolved content needs the NORMAL behavior, not %s", ErrInvalid, name, km.Behavior)
	case km.ExpectedTarget == nil:
		return mode, fmt.Errorf("%w: merge mode for %q: resolved content needs the expected target value it was resolved against", ErrInvalid, name)
	case r.Type != km.ExpectedTarget.Type:
		return mode, fmt.Errorf("%w: resolved content for %q is a %s, the target holds a %s", ErrInvalid, name, r.Type, km.ExpectedTarget.Type)
	case r.ID != "" && r.ID != km.ExpectedTarget.ID:
		return mode, fmt.Errorf("%w: resolved content for %q has content id %s, the target's is %s", ErrInvalid, name, r.ID, km.ExpectedTarget.ID)
	}
	if err := r.validate(); err != nil {
		return mode, fmt.Errorf("resolved content for %q: %w", name, err)
	}
	c := r.Clone()
	c.ID = km.ExpectedTarget.ID
	data := encodeContent(c)
	mode.resolved = &preparedPut{content: c, data: data, hash: hashOf(data)}
	return mode, nil
}

func validBehavior(b MergeBehavior) error {
	switch b {
	case MergeNormal, MergeForce, MergeDrop:
		return nil
	}
	return fmt.Errorf("%w: unknown merge behavior %q", ErrInvalid, b)
}

func (m mergeModes) of(key []byte) keyMode {
	if b, ok := m.byKey[string(key)]; ok {
		return b
	}
	return keyMode{behavior: m.def}
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
	modes, err := newMergeModes(req.DefaultMode, req.KeyModes, true)
	if err != nil {
		return nil, err
	}
	if _, err := s.commit(ctx, req.From); err != nil {
		return nil, fmt.Errorf("merge source: %w", err)
	}
	return s.planAndWrite(ctx, req.Target, planOptions{check: req.Check, dryRun: req.DryRun, committer: req.Committer, record: req.Record},
		func(ctx context.Context, t *refTxn) (*mergePlan, error) { return t.planMerge(ctx, req, modes) })
}

// mergePlan is a merge or transplant computed on one head of its target,
// outside the committer: what to write, and what it depends on.
type mergePlan struct {
	onto   Hash // the target head it was computed on
	result *MergeResult
	steps  []planStep // the commits to write, oldest first
	// puts are content objects the commits need that may not exist yet
	// (resolved content).
	puts []*preparedPut
	// reads are the keys whose target values the plan was computed from:
	// it stays exact on a later head as long as none of them changed.
	reads map[string]bool
	// needBase says the plan depends on the merge base, which only a
	// commit with several parents landing on the target can change.
	needBase bool
}

// planStep is one commit of a plan.
type planStep struct {
	ops          []CommitOp
	meta         CommitMeta
	message      string
	extraParents []Hash
	op           RefLogOp
}

type planOptions struct {
	check     WriteCheck
	dryRun    bool
	committer string
	record    *Record
}

// maxPlanAttempts bounds how often a merge or transplant is computed and
// checked again because its target moved under it.
const maxPlanAttempts = 8

// planAndWrite runs the pattern every merge and transplant follows: compute
// the plan on the target's head on this goroutine, have the check vet its
// exact changes, then hand the committer only the writing of it, which is
// refused if the target moved in a way that changes the plan. Then it is
// computed and checked again. Nothing here runs on the committer but
// applyPlan, which neither evaluates policy nor calls back into the
// caller.
func (s *Store) planAndWrite(ctx context.Context, target string, o planOptions, plan func(context.Context, *refTxn) (*mergePlan, error)) (*MergeResult, error) {
	rec, err := s.prepareRecord(ctx, o.record)
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		base, err := s.planBase(ctx, target)
		if err != nil {
			return nil, err
		}
		scratch := &refTxn{s: s, name: target, ref: base, ov: newOverlay(s, nil)}
		p, err := plan(ctx, scratch)
		if err != nil {
			var cr *conflictResult
			var ce *ConflictError
			switch {
			case errors.As(err, &cr):
				s.stats.Conflicts.Add(1)
				return cr.result, cr.ConflictError
			case errors.As(err, &ce):
				s.stats.Conflicts.Add(1)
			}
			return nil, err
		}
		if len(p.steps) == 0 {
			return p.result, nil // nothing to write
		}
		if o.check != nil {
			changes, err := scratch.checkedChanges(ctx, p)
			if err != nil {
				return nil, err
			}
			if err := o.check(ctx, changes); err != nil {
				return nil, err
			}
		}
		if o.dryRun {
			return p.result, nil
		}
		res, err := s.write(ctx, target, func(ctx context.Context, t *refTxn) (any, error) {
			return t.applyPlan(ctx, p, o.committer, rec)
		})
		if errors.Is(err, errTargetMoved) {
			if attempt < maxPlanAttempts {
				continue
			}
			s.stats.Conflicts.Add(1)
			return nil, &ConflictError{Ref: target, Conflicts: []Conflict{{Type: ConflictUnexpectedHash,
				Message: fmt.Sprintf("%q kept changing the keys being merged while the merge was computed and checked (%d attempts); try again", target, attempt)}}}
		}
		return mergeOutcome(res, err)
	}
}

// errTargetMoved tells planAndWrite that the target changed since its plan
// was computed, in a way that could change the plan.
var errTargetMoved = errors.New("merge target moved")

// maxPlanRebase bounds how many commits the committer inspects to decide
// whether a plan still holds on a head that moved past it.
const maxPlanRebase = 64

// applyPlan writes a plan on the committer. The plan holds if the head is
// the one it was computed on, or descends from it by at most maxPlanRebase
// commits that touched none of the keys the plan read (and, if it depends
// on the merge base, have one parent each): a computation on the current
// head would then give the same changes, so what the check approved is
// exactly what is written. Otherwise it returns errTargetMoved.
func (t *refTxn) applyPlan(ctx context.Context, p *mergePlan, committer string, rec *preparedRecord) (*MergeResult, error) {
	ref, err := t.branch()
	if err != nil {
		return nil, err
	}
	if ref.Head != p.onto {
		if ok, err := t.planHolds(ctx, p); err != nil || !ok {
			return nil, errors.Join(err, errTargetMoved)
		}
	}
	head, err := t.loadHead(ctx, ref.Head)
	if err != nil {
		return nil, err
	}
	for _, put := range p.puts {
		t.ov.putEncoded(put.data, put.hash, put.content)
	}
	res := *p.result
	res.EffectiveTargetHash = ref.Head
	for _, st := range p.steps {
		c, err := t.applyOps(ctx, head, st.ops, st.meta, committer, st.message, st.extraParents...)
		if err != nil {
			return nil, withResult(err, &res)
		}
		t.move(c.Hash, st.op, committer)
		res.Commits = append(res.Commits, c.clone())
		head = c
	}
	t.commits += len(p.steps)
	res.WasApplied = true
	res.ResultantHash = head.Hash
	t.addRecord(rec)
	return &res, nil
}

// planHolds walks back from the head to the plan's head and reports whether
// every commit in between leaves the plan exact.
func (t *refTxn) planHolds(ctx context.Context, p *mergePlan) (bool, error) {
	// Reaching onto by first parents proves it an ancestor of the head.
	h := t.ref.Head
	for i := 0; i < maxPlanRebase; i++ {
		if h == p.onto {
			return true, nil
		}
		c, err := t.ov.commit(ctx, h)
		if err != nil {
			return false, err
		}
		if p.needBase && len(c.Parents) > 1 {
			return false, nil
		}
		for _, op := range c.Operations {
			if p.reads[string(op.Key.Encode())] {
				return false, nil
			}
		}
		h = c.Parent()
	}
	return false, nil
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

// planMerge computes a merge on the scratch transaction's head.
func (t *refTxn) planMerge(ctx context.Context, req MergeRequest, modes mergeModes) (*mergePlan, error) {
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
	p := &mergePlan{onto: ref.Head, result: res, reads: map[string]bool{}, needBase: true}
	if base == req.From {
		res.WasSuccessful = true // already merged: nothing to do
		return p, nil
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
	for _, ch := range changes {
		p.reads[string(ch.key)] = true
	}
	for _, km := range modes.byKey {
		if km.expectedPut != nil {
			// Only for reading: the scratch overlay is never written.
			t.ov.putEncoded(km.expectedPut.data, km.expectedPut.hash, km.expectedPut.content)
		}
	}
	resolved := map[string]bool{}
	ops, details, conflicts, err := t.resolveChanges(ctx, head.Tree, changes, modes, resolved)
	if err != nil {
		return nil, err
	}
	res.Details = details
	if len(conflicts) > 0 {
		return nil, &conflictResult{ConflictError: &ConflictError{Ref: t.name, Conflicts: conflicts}, result: res}
	}
	if err := modes.resolvedUsed(resolved); err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		res.WasSuccessful = true
		return p, nil // everything dropped or already present
	}
	p.puts = modes.resolvedPuts()
	for _, put := range p.puts {
		t.ov.putEncoded(put.data, put.hash, put.content)
	}
	// Applied here too, on the scratch overlay, for what only the new tree
	// shows (namespace rules): a dry run and the check see those conflicts.
	msg := defaultMergeMessage(req)
	if _, err := t.applyOps(ctx, head, ops, req.Meta, req.Committer, msg, req.From); err != nil {
		return nil, withResult(err, res)
	}
	res.WasSuccessful = true
	p.steps = []planStep{{ops: ops, meta: req.Meta, message: msg, extraParents: []Hash{req.From}, op: RefLogMerge}}
	return p, nil
}

// resolvedPuts lists the prepared resolved contents.
func (m mergeModes) resolvedPuts() []*preparedPut {
	var out []*preparedPut
	for _, km := range m.byKey {
		if km.resolved != nil {
			out = append(out, km.resolved)
		}
	}
	return out
}

// resolvedUsed checks that every resolved content was used, as recorded
// by resolveChanges: one given for a key the merge does not put would
// otherwise be dropped without a word.
func (m mergeModes) resolvedUsed(used map[string]bool) error {
	for k, km := range m.byKey {
		if km.resolved == nil {
			continue
		}
		if !used[k] {
			key, _ := DecodeKey([]byte(k))
			return fmt.Errorf("%w: the merge mode for %q has resolved content, but the merge does not put that key", ErrInvalid, key.String())
		}
	}
	return nil
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
// target, by the key's merge mode and the target's current value. It
// records in resolved (if not nil) the keys written with resolved content.
func (t *refTxn) resolveChanges(ctx context.Context, targetTree Hash, changes []keyChange, modes mergeModes, resolved map[string]bool) ([]CommitOp, []KeyDetail, []Conflict, error) {
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
		mode := modes.of(ch.key)
		detail := KeyDetail{Key: key, Behavior: mode.behavior}
		if mode.behavior == MergeDrop && !mode.expect {
			details = append(details, detail)
			continue
		}
		tv, tok, err := lookup(ctx, t.ov, targetTree, ch.key)
		if err != nil {
			return nil, nil, nil, err
		}
		if mode.expect {
			// The caller's expectation replaces the merge base as what
			// the target must hold, whatever the behavior.
			if !tok || tv != mode.expected {
				c, err := t.conflictFor(ctx, key, mode.expected, true, tv, tok)
				if err != nil {
					return nil, nil, nil, err
				}
				c.Message = fmt.Sprintf("key %q does not hold the expected target content: %s", key.String(), c.Message)
				detail.Conflict = &c
				details = append(details, detail)
				conflicts = append(conflicts, c)
				continue
			}
			details = append(details, detail)
			switch {
			case mode.behavior == MergeDrop:
			case mode.resolved != nil && ch.sourceOK:
				if resolved != nil {
					resolved[string(ch.key)] = true
				}
				if tv != mode.resolved.hash { // else the target has it already
					ops = append(ops, CommitOp{Kind: OpPut, Key: key, Value: mode.resolved.hash})
				}
			case tv == ch.source && tok == ch.sourceOK:
				// the target already has it
			case ch.sourceOK:
				ops = append(ops, CommitOp{Kind: OpPut, Key: key, Value: ch.source})
			default:
				ops = append(ops, CommitOp{Kind: OpDelete, Key: key})
			}
			continue
		}
		if tv == ch.source && tok == ch.sourceOK {
			details = append(details, detail) // the target already has it
			continue
		}
		if mode.behavior == MergeNormal && (tv != ch.base || tok != ch.baseOK) {
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
	return t.newCommit(ctx, head, tree, meta, committer, ops, extraParents...)
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

// Transplant replays commits onto a branch.
func (s *Store) Transplant(ctx context.Context, req TransplantRequest) (*MergeResult, error) {
	if err := ValidateRefName(req.Target); err != nil {
		return nil, err
	}
	if len(req.Commits) == 0 {
		return nil, fmt.Errorf("%w: transplant needs at least one commit", ErrInvalid)
	}
	modes, err := newMergeModes(req.DefaultMode, req.KeyModes, true)
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
	return s.planAndWrite(ctx, req.Target, planOptions{check: req.Check, dryRun: req.DryRun, committer: req.Committer, record: req.Record},
		func(ctx context.Context, t *refTxn) (*mergePlan, error) { return t.planTransplant(ctx, req, modes) })
}

// planTransplant computes a transplant on the scratch transaction's head.
func (t *refTxn) planTransplant(ctx context.Context, req TransplantRequest, modes mergeModes) (*mergePlan, error) {
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
	p := &mergePlan{onto: ref.Head, result: res, reads: map[string]bool{}}
	// Expected and resolved values, as in planMerge: only for reading and
	// for the replayed commits (the scratch overlay is never written).
	for _, km := range modes.byKey {
		if km.expectedPut != nil {
			t.ov.putEncoded(km.expectedPut.data, km.expectedPut.hash, km.expectedPut.content)
		}
	}
	p.puts = modes.resolvedPuts()
	for _, put := range p.puts {
		t.ov.putEncoded(put.data, put.hash, put.content)
	}
	resolved := map[string]bool{}
	var conflicts []Conflict
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
			p.reads[string(k)] = true
			changes = append(changes, keyChange{key: k, base: pv, baseOK: pok, source: op.Value, sourceOK: op.Kind == OpPut})
		}
		ops, details, cs, err := t.resolveChanges(ctx, head.Tree, changes, modes, resolved)
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
		props := src.Properties
		if extra := req.ReplayProperties[h]; len(extra) > 0 {
			props = maps.Clone(props)
			if props == nil {
				props = map[string]string{}
			}
			maps.Copy(props, extra)
		}
		meta := CommitMeta{Author: src.Author, AuthorTime: src.AuthorTime, Properties: props}
		c, err := t.applyOps(ctx, head, ops, meta, req.Committer, src.Message)
		if err != nil {
			return nil, withResult(err, res)
		}
		p.steps = append(p.steps, planStep{ops: ops, meta: meta, message: src.Message, op: RefLogTransplant})
		head = c
	}
	if len(conflicts) > 0 {
		return nil, &conflictResult{ConflictError: &ConflictError{Ref: t.name, Conflicts: conflicts}, result: res}
	}
	if err := modes.resolvedUsed(resolved); err != nil {
		return nil, err
	}
	res.WasSuccessful = true
	return p, nil
}

// checkedChanges describes a plan's changes for its check: one change per
// key, from the key's value at the plan's head to its last value.
func (t *refTxn) checkedChanges(ctx context.Context, p *mergePlan) ([]CheckedChange, error) {
	c, err := t.ov.commit(ctx, p.onto)
	if err != nil {
		return nil, err
	}
	tree, err := t.s.treeSource(ctx, c, t.ov)
	if err != nil {
		return nil, err
	}
	last := map[string]int{}
	var changes []CheckedChange
	for _, st := range p.steps {
		for _, op := range st.ops {
			k := op.Key.Encode()
			i, seen := last[string(k)]
			if !seen {
				before, err := t.contentAt(ctx, tree, c.Tree, k)
				if err != nil {
					return nil, err
				}
				i = len(changes)
				last[string(k)] = i
				changes = append(changes, CheckedChange{Key: op.Key, Before: before})
			}
			changes[i].Kind, changes[i].After = op.Kind, nil
			if op.Kind == OpPut {
				after, err := t.ov.content(ctx, op.Value)
				if err != nil {
					return nil, err
				}
				changes[i].After = after
			}
		}
	}
	return changes, nil
}

// contentAt is the content of key in the tree at root, nil when absent.
func (t *refTxn) contentAt(ctx context.Context, src nodeSource, root Hash, key []byte) (*Content, error) {
	v, ok, err := lookup(ctx, src, root, key)
	if err != nil || !ok {
		return nil, err
	}
	return t.ov.content(ctx, v)
}
