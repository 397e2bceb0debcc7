package versionstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
)

// Operation is one change requested by a commit.
type Operation struct {
	Kind    OperationKind
	Key     ContentKey
	Content *Content // for OpPut
}

// CommitRequest asks for one atomic commit on a branch.
type CommitRequest struct {
	Branch string
	// Expected is the head the client based its changes on. If the branch
	// moved since, the commit still applies when none of its keys changed
	// in between (the store rebases it); otherwise it conflicts.
	Expected   Hash
	Operations []Operation
	Meta       CommitMeta
	// Committer is the authenticated principal, set by the server.
	Committer string
	// Record, if set, is stored in the same durable batch as the commit,
	// and only if the commit succeeds. A conditional record (Record.If)
	// whose condition fails fails the commit with ErrRecordConflict.
	Record *Record
}

// AddedContent reports a content id the store assigned.
type AddedContent struct {
	Key ContentKey
	ID  string
}

// CommitResult describes a durable commit.
type CommitResult struct {
	Commit  *Commit
	Added   []AddedContent
	Rebased bool // applied onto a head newer than Expected
}

// Commit applies the operations atomically as one commit on the branch.
func (s *Store) Commit(ctx context.Context, req CommitRequest) (*CommitResult, error) {
	if err := ValidateRefName(req.Branch); err != nil {
		return nil, err
	}
	ops, err := prepareOperations(req.Operations)
	if err != nil {
		return nil, err
	}
	req.Operations = ops
	rec, err := s.prepareRecord(ctx, req.Record)
	if err != nil {
		return nil, err
	}
	puts := preparePuts(req.Operations)
	var keys [][]byte
	if s.multi != nil { // only a shared backend's rounds prefetch
		keys = readKeys(req.Operations)
	}
	res, err := s.writeKeys(ctx, req.Branch, keys, func(ctx context.Context, t *refTxn) (any, error) {
		return t.commit(ctx, req, puts, rec)
	})
	if err != nil {
		return nil, err
	}
	r := res.(*CommitResult)
	r.Commit = r.Commit.clone() // the original is shared with the cache
	return r, nil
}

// readKeys are the tree keys a commit of ops looks up: each key and the
// namespaces above a put.
func readKeys(ops []Operation) [][]byte {
	keys := make([][]byte, 0, len(ops))
	seen := map[string]bool{}
	for _, op := range ops {
		n := 1
		if op.Kind == OpPut {
			n = len(op.Key)
		}
		for i := len(op.Key); i > 0 && i > len(op.Key)-n; i-- {
			k := op.Key[:i].Encode()
			if !seen[string(k)] {
				seen[string(k)] = true
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// preparedPut is a put's content, encoded and hashed by the caller's
// goroutine before the write is queued: the reference's committer applies
// every commit to the branch one after another, so work moved off it
// raises the throughput of concurrent commits.
type preparedPut struct {
	content *Content // as stored: with the requested id, or a new one
	newID   bool     // the request carried no id, content.ID is new
	data    []byte
	hash    Hash
}

// preparePuts prepares the content of every put in ops (nil entries for
// other operations). A new id is only used if the key turns out not to
// exist; the same one serves if the write is applied again after a backend
// conflict, since the first attempt was never durable nor reported.
func preparePuts(ops []Operation) []preparedPut {
	out := make([]preparedPut, len(ops))
	for i, op := range ops {
		if op.Kind != OpPut {
			continue
		}
		c := op.Content.Clone()
		p := preparedPut{content: c}
		if c.ID == "" {
			c.ID, p.newID = uuid.NewString(), true
		}
		p.data = encodeContent(c)
		p.hash = hashOf(p.data)
		out[i] = p
	}
	return out
}

// prepareOperations validates operations, copies their contents so callers
// cannot change them later, and sorts them by key.
func prepareOperations(in []Operation) ([]Operation, error) {
	seen := make(map[string]bool, len(in))
	out := make([]Operation, 0, len(in))
	for _, op := range in {
		validate := op.Key.Validate
		if op.Kind == OpPut {
			validate = op.Key.ValidateNew // a delete may remove an older, longer key
		}
		if err := validate(); err != nil {
			return nil, err
		}
		k := string(op.Key.Encode())
		if seen[k] {
			return nil, fmt.Errorf("%w: key %q appears more than once in one commit", ErrInvalid, op.Key.String())
		}
		seen[k] = true
		switch op.Kind {
		case OpPut:
			if op.Content == nil {
				return nil, fmt.Errorf("%w: put of %q has no content", ErrInvalid, op.Key.String())
			}
			if err := op.Content.validate(); err != nil {
				return nil, fmt.Errorf("put of %q: %w", op.Key.String(), err)
			}
			op.Content = op.Content.Clone()
		case OpDelete, OpUnchanged:
			if op.Content != nil {
				return nil, fmt.Errorf("%w: %s of %q cannot carry content", ErrInvalid, op.Kind, op.Key.String())
			}
		default:
			return nil, fmt.Errorf("%w: unknown operation kind %d for %q", ErrInvalid, op.Kind, op.Key.String())
		}
		op.Key = slices.Clone(op.Key)
		out = append(out, op)
	}
	slices.SortFunc(out, func(a, b Operation) int { return bytes.Compare(a.Key.Encode(), b.Key.Encode()) })
	return out, nil
}

func (t *refTxn) branch() (*Ref, error) {
	if t.ref == nil {
		return nil, fmt.Errorf("branch %q: %w", t.name, ErrReferenceNotFound)
	}
	if t.ref.Type != Branch {
		return nil, fmt.Errorf("%w: %q is a %s", ErrNotABranch, t.name, t.ref.Type)
	}
	return t.ref, nil
}

// checkExpected verifies that expected is the head or one of its ancestors
// and reports whether the head has moved past it.
func (t *refTxn) checkExpected(ctx context.Context, expected Hash) (moved bool, err error) {
	head := t.ref.Head
	if expected == head {
		return false, nil
	}
	if expected == (Hash{}) {
		return false, fmt.Errorf("%w: an expected hash is required to write to %q", ErrInvalid, t.name)
	}
	if t.chain != nil && t.chain.has(expected) {
		return true, nil
	}
	if _, err := t.ov.commit(ctx, expected); err != nil {
		return false, err
	}
	ok, err := isAncestor(ctx, t.ov, expected, head)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, unexpectedHash(t.name, expected, head)
	}
	return true, nil
}

func (t *refTxn) commit(ctx context.Context, req CommitRequest, puts []preparedPut, rec *preparedRecord) (*CommitResult, error) {
	ref, err := t.branch()
	if err != nil {
		return nil, err
	}
	moved, err := t.checkExpected(ctx, req.Expected)
	if err != nil {
		return nil, err
	}
	headCommit, err := t.loadHead(ctx, ref.Head)
	if err != nil {
		return nil, err
	}
	var (
		expectedTree Hash
		expectedSrc  nodeSource
	)
	if moved {
		ec, err := t.ov.commit(ctx, req.Expected)
		if err != nil {
			return nil, err
		}
		expectedTree = ec.Tree
		if expectedSrc, err = t.s.treeSource(ctx, ec, t.ov); err != nil {
			return nil, err
		}
	}
	var (
		conflicts []Conflict
		muts      []mutation
		stored    []CommitOp
		added     []AddedContent
	)
	for i, op := range req.Operations {
		k := op.Key.Encode()
		hv, hok, err := lookup(ctx, t.ov, headCommit.Tree, k)
		if err != nil {
			return nil, err
		}
		if moved {
			ev, eok, err := lookup(ctx, expectedSrc, expectedTree, k)
			if err != nil {
				return nil, err
			}
			if ev != hv || eok != hok {
				c, err := t.conflictFor(ctx, op.Key, ev, eok, hv, hok)
				if err != nil {
					return nil, err
				}
				c.Message = fmt.Sprintf("key %q changed since the expected hash: %s", op.Key.String(), c.Message)
				conflicts = append(conflicts, c)
				continue
			}
		}
		switch op.Kind {
		case OpPut:
			c, p := op.Content, puts[i]
			if hok {
				cur, err := t.ov.content(ctx, hv)
				if err != nil {
					return nil, err
				}
				switch {
				case cur.Type != c.Type:
					conflicts = append(conflicts, Conflict{Type: ConflictPayloadDiffers, Key: op.Key,
						Message: fmt.Sprintf("key %q holds a %s, cannot put a %s", op.Key.String(), cur.Type, c.Type)})
					continue
				case p.newID:
					conflicts = append(conflicts, Conflict{Type: ConflictKeyExists, Key: op.Key,
						Message: fmt.Sprintf("key %q already exists; an update must carry its content id %s", op.Key.String(), cur.ID)})
					continue
				case c.ID != cur.ID:
					conflicts = append(conflicts, Conflict{Type: ConflictContentIDDiffers, Key: op.Key,
						Message: fmt.Sprintf("key %q has content id %s, not %s", op.Key.String(), cur.ID, c.ID)})
					continue
				}
			} else if p.newID {
				added = append(added, AddedContent{Key: op.Key, ID: p.content.ID})
			}
			h := t.ov.putEncoded(p.data, p.hash, p.content)
			muts = append(muts, mutation{key: k, value: h})
			stored = append(stored, CommitOp{Kind: OpPut, Key: op.Key, Value: h})
		case OpDelete:
			if !hok {
				conflicts = append(conflicts, Conflict{Type: ConflictKeyDoesNotExist, Key: op.Key,
					Message: fmt.Sprintf("key %q does not exist", op.Key.String())})
				continue
			}
			muts = append(muts, mutation{key: k, del: true})
			stored = append(stored, CommitOp{Kind: OpDelete, Key: op.Key})
		case OpUnchanged:
			// Checked above against the expected hash; nothing to store.
		}
	}
	if len(conflicts) > 0 {
		return nil, &ConflictError{Ref: t.name, Conflicts: conflicts}
	}
	tree, err := editTree(ctx, t.ov, headCommit.Tree, muts)
	if err != nil {
		return nil, err
	}
	if conflicts, err := t.checkNamespaces(ctx, headCommit.Tree, tree, stored); err != nil {
		return nil, err
	} else if len(conflicts) > 0 {
		return nil, &ConflictError{Ref: t.name, Conflicts: conflicts}
	}
	c, err := t.newCommit(ctx, headCommit, tree, req.Meta, req.Committer, stored)
	if err != nil {
		return nil, err
	}
	t.move(c.Hash, RefLogCommit, req.Committer)
	t.commits++
	t.addRecord(rec)
	return &CommitResult{Commit: c, Added: added, Rebased: moved}, nil
}

// newCommit stores a commit on top of parent. Commit times never go
// backwards along a branch, which keeps "*timestamp" lookups sound. A
// commit's Seq is one more than the largest Seq of its parents, so every
// parent must be read: a parent that cannot be read fails the commit
// rather than leave it with a Seq that could be below a parent's, which
// would break every walk that relies on Seq to order history.
func (t *refTxn) newCommit(ctx context.Context, parent *Commit, tree Hash, meta CommitMeta, committer string, ops []CommitOp, extraParents ...Hash) (*Commit, error) {
	now := t.s.now()
	if now.Before(parent.CommitTime) {
		now = parent.CommitTime
	}
	c := &Commit{
		Parents:    append([]Hash{parent.Hash}, extraParents...),
		Tree:       tree,
		Seq:        parent.Seq + 1,
		Author:     meta.Author,
		AuthorTime: meta.AuthorTime.UTC().Truncate(time.Microsecond),
		Committer:  committer,
		CommitTime: now,
		Message:    meta.Message,
		Properties: maps.Clone(meta.Properties),
		Operations: ops,
	}
	for _, p := range extraParents {
		pc, err := t.ov.commit(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("read parent %s of the new commit on %q: %w", p, t.name, err)
		}
		if pc.Seq >= c.Seq {
			c.Seq = pc.Seq + 1
		}
	}
	if c.Author == "" {
		c.Author = committer
	}
	if meta.AuthorTime.IsZero() {
		c.AuthorTime = now
	}
	t.ov.putCommit(c)
	return c, nil
}

// conflictFor classifies the difference between the value a write expected
// for key and the value it found.
func (t *refTxn) conflictFor(ctx context.Context, key ContentKey, ev Hash, eok bool, av Hash, aok bool) (Conflict, error) {
	c := Conflict{Key: key}
	switch {
	case !eok && aok:
		c.Type, c.Message = ConflictKeyExists, fmt.Sprintf("key %q was added", key.String())
	case eok && !aok:
		c.Type, c.Message = ConflictKeyDoesNotExist, fmt.Sprintf("key %q was removed", key.String())
	default:
		ec, err := t.ov.content(ctx, ev)
		if err != nil {
			return c, err
		}
		ac, err := t.ov.content(ctx, av)
		if err != nil {
			return c, err
		}
		switch {
		case ec.Type != ac.Type:
			c.Type, c.Message = ConflictPayloadDiffers, fmt.Sprintf("key %q changed from %s to %s", key.String(), ec.Type, ac.Type)
		case ec.ID != ac.ID:
			c.Type, c.Message = ConflictContentIDDiffers, fmt.Sprintf("key %q now holds content id %s instead of %s", key.String(), ac.ID, ec.ID)
		default:
			c.Type, c.Message = ConflictValueDiffers, fmt.Sprintf("values of key %q differ", key.String())
		}
	}
	return c, nil
}

// checkNamespaces enforces that every put key's parent namespaces exist in
// the new tree and that deleted namespaces were empty.
func (t *refTxn) checkNamespaces(ctx context.Context, oldTree, newTree Hash, ops []CommitOp) ([]Conflict, error) {
	var conflicts []Conflict
	checked := map[string]bool{}
	for _, op := range ops {
		switch op.Kind {
		case OpPut:
			for i := 1; i < len(op.Key); i++ {
				ns := op.Key[:i]
				enc := string(ns.Encode())
				if checked[enc] {
					continue
				}
				checked[enc] = true
				v, ok, err := lookup(ctx, t.ov, newTree, ns.Encode())
				if err != nil {
					return nil, err
				}
				if !ok {
					conflicts = append(conflicts, Conflict{Type: ConflictNamespaceAbsent, Key: slices.Clone(ns),
						Message: fmt.Sprintf("namespace %q does not exist", ns.String())})
					continue
				}
				c, err := t.ov.content(ctx, v)
				if err != nil {
					return nil, err
				}
				if c.Type != Namespace {
					conflicts = append(conflicts, Conflict{Type: ConflictNotANamespace, Key: slices.Clone(ns),
						Message: fmt.Sprintf("%q is a %s, not a namespace", ns.String(), c.Type)})
				}
			}
		case OpDelete:
			v, ok, err := lookup(ctx, t.ov, oldTree, op.Key.Encode())
			if err != nil || !ok {
				return nil, errors.Join(err, fmt.Errorf("%w: deleted key %q missing from parent tree", ErrCorrupt, op.Key.String()))
			}
			c, err := t.ov.content(ctx, v)
			if err != nil {
				return nil, err
			}
			if c.Type != Namespace {
				continue
			}
			lo, hi := childRange(op.Key)
			nonEmpty := false
			if err := scanRange(ctx, t.ov, newTree, lo, hi, func([]byte, Hash) bool { nonEmpty = true; return false }); err != nil {
				return nil, err
			}
			if nonEmpty {
				conflicts = append(conflicts, Conflict{Type: ConflictNamespaceNotEmpty, Key: op.Key,
					Message: fmt.Sprintf("namespace %q is not empty", op.Key.String())})
			}
		}
	}
	return conflicts, nil
}
