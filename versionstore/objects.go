package versionstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// objectSource reads decoded objects.
type objectSource interface {
	nodeSource
	commit(ctx context.Context, h Hash) (*Commit, error)
	content(ctx context.Context, h Hash) (*Content, error)
}

// load reads, verifies and decodes one object through the cache. Every
// object is checked against its hash once, when it enters the cache, so a
// torn or corrupted object is reported instead of being believed.
func load[T any](ctx context.Context, s *Store, h Hash, decode func([]byte) (T, error), what string) (T, error) {
	var zero T
	if v, ok := s.cache.get(h); ok {
		if t, ok := v.(T); ok {
			return t, nil
		}
		return zero, fmt.Errorf("%w: object %s is not a %s", ErrCorrupt, h, what)
	}
	data, err := s.be.GetObject(ctx, h)
	if err != nil {
		if errors.Is(err, backend.ErrObjectNotFound) {
			return zero, fmt.Errorf("%s %s: %w", what, h, errNotFoundFor(what))
		}
		return zero, fmt.Errorf("read %s %s: %w", what, h, err)
	}
	if hashOf(data) != h {
		return zero, fmt.Errorf("%w: %s %s does not match its hash", ErrCorrupt, what, h)
	}
	v, err := decode(data)
	if err != nil {
		return zero, fmt.Errorf("%s %s: %w", what, h, err)
	}
	s.cache.add(h, v, footprint(v, len(data)))
	return v, nil
}

// footprint estimates the memory a decoded object holds.
func footprint(v any, encoded int) int {
	if n, ok := v.(*node); ok {
		return n.size
	}
	return 2*encoded + 128 // commits and contents: strings, maps, slices
}

func errNotFoundFor(what string) error {
	switch what {
	case "commit":
		return ErrCommitNotFound
	case "content":
		return ErrContentNotFound
	default:
		return fmt.Errorf("%w: missing %s", ErrCorrupt, what)
	}
}

func (s *Store) node(ctx context.Context, h Hash) (*node, error) {
	return load(ctx, s, h, decodeNode, "tree node")
}

func (s *Store) commit(ctx context.Context, h Hash) (*Commit, error) {
	if h == NoAncestor {
		return noAncestorCommit, nil
	}
	c, err := load(ctx, s, h, func(b []byte) (*Commit, error) {
		c, err := decodeCommit(b)
		if err == nil {
			c.Hash = h
		}
		return c, err
	}, "commit")
	return c, err
}

func (s *Store) content(ctx context.Context, h Hash) (*Content, error) {
	return load(ctx, s, h, decodeContent, "content")
}

// overlay holds objects made by a write that is not durable yet, in front of
// the store. Nested overlays let one request of a group fail without leaving
// its objects in the group's batch.
type overlay struct {
	store  *Store
	parent *overlay
	objs   map[Hash]pendingObject
	order  []Hash
	// Set by seal when the round is about to be written: the nodes its
	// batch persists. Later rounds only read them.
	kept   map[Hash]bool
	sealed bool
}

type pendingObject struct {
	data []byte
	val  any
}

func newOverlay(s *Store, parent *overlay) *overlay {
	// A round is usually about as large as the one before it; sizing the
	// map for that spares the committer its growth.
	size := 0
	if parent != nil {
		size = len(parent.order)
	}
	return &overlay{store: s, parent: parent, objs: make(map[Hash]pendingObject, size), order: make([]Hash, 0, size)}
}

func (o *overlay) find(h Hash) (any, bool) {
	for x := o; x != nil; x = x.parent {
		if p, ok := x.objs[h]; ok {
			return p.val, true
		}
	}
	return nil, false
}

func (o *overlay) put(data []byte, val any) Hash { return o.putEncoded(data, hashOf(data), val) }

// putEncoded is put for an object whose hash h is already known.
func (o *overlay) putEncoded(data []byte, h Hash, val any) Hash {
	if _, ok := o.objs[h]; ok {
		return h
	}
	// A node a round in flight made but does not persist is taken into
	// this round, which persists it if its own last tree keeps it.
	if _, kept, found := o.inFlight(h); found && kept {
		return h
	}
	o.objs[h] = pendingObject{data: data, val: val}
	o.order = append(o.order, h)
	return h
}

func (o *overlay) node(ctx context.Context, h Hash) (*node, error) {
	if v, ok := o.find(h); ok {
		if n, ok := v.(*node); ok {
			return n, nil
		}
		return nil, fmt.Errorf("%w: object %s is not a tree node", ErrCorrupt, h)
	}
	return o.store.node(ctx, h)
}

func (o *overlay) commit(ctx context.Context, h Hash) (*Commit, error) {
	if v, ok := o.find(h); ok {
		if c, ok := v.(*Commit); ok {
			return c, nil
		}
		return nil, fmt.Errorf("%w: object %s is not a commit", ErrCorrupt, h)
	}
	return o.store.commit(ctx, h)
}

func (o *overlay) content(ctx context.Context, h Hash) (*Content, error) {
	if v, ok := o.find(h); ok {
		if c, ok := v.(*Content); ok {
			return c, nil
		}
		return nil, fmt.Errorf("%w: object %s is not content", ErrCorrupt, h)
	}
	return o.store.content(ctx, h)
}

func (o *overlay) putNode(n *node) Hash {
	n.size = nodeFootprint(len(n.keyBuf), n.len())
	return o.put(encodeNode(n), n)
}

func (o *overlay) putContent(c *Content) Hash { return o.put(encodeContent(c), c) }

func (o *overlay) putCommit(c *Commit) Hash {
	data := encodeCommit(c)
	c.Hash = hashOf(data)
	return o.put(data, c)
}

// mark returns a savepoint for rollback.
func (o *overlay) mark() int { return len(o.order) }

// rollback forgets the objects put since the savepoint m: those of a write
// that failed, which must not reach the batch. It is cheaper than giving
// every write its own overlay and merging it into the round's.
func (o *overlay) rollback(m int) {
	for _, h := range o.order[m:] {
		delete(o.objs, h)
	}
	o.order = o.order[:m]
}

// objects returns the pending objects in creation order, for a batch.
func (o *overlay) objects() []backend.Object {
	out := make([]backend.Object, 0, len(o.order))
	for _, h := range o.order {
		p := o.objs[h]
		if o.unpersisted(h, p) {
			continue // a node of an intermediate tree only
		}
		out = append(out, backend.Object{ID: h, Data: p.data})
	}
	return out
}

// publish adds the now durable objects to the cache.
func (o *overlay) publish() {
	entries := make([]cacheEntry, 0, len(o.order))
	for _, h := range o.order {
		p := o.objs[h]
		if o.unpersisted(h, p) {
			continue // read through the tree registry; see registerUnpersisted
		}
		entries = append(entries, cacheEntry{hash: h, val: p.val, size: int64(footprint(p.val, len(p.data)))})
	}
	o.store.cache.addAll(entries)
	o.registerUnpersisted()
}
