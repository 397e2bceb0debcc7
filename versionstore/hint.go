package versionstore

import "encoding/binary"

// Ref hints.
//
// Replicas that take turns on one branch each start their round on a head
// another replica just wrote: its commit and the upper nodes of its tree are
// new to them, and reading them costs a round trip per tree level while the
// ref's row lock is held. So a round written while the ref is contended
// leaves, beside the ref's new value (backend.RefUpdate.Hint), the objects
// the next writer reads first: the head commit, then the inner nodes the
// round made, top level first, up to maxHintBytes. LockRef returns them with
// the lock, and the store caches those that match their hash and decode.
// A hint is a cache, never trusted: a missing, short or stale one only
// means the nodes are read as before.
//
// The encoding is a sequence of objects, each an unsigned varint length
// followed by the object's bytes: the commit first, then tree nodes.

// maxHintBytes bounds a hint: the commit and the upper levels of a large
// tree, without making the ref's row a burden to update.
const maxHintBytes = 32 << 10

// hint encodes the round's head commit and the inner nodes it made of the
// head's tree, breadth first from the root; nil if the head was not made
// by the round.
func (p *preparedRound) hint() []byte {
	if p.cur == nil {
		return nil
	}
	own := p.ov.objs
	po, ok := own[p.cur.Head]
	if !ok {
		return nil
	}
	c, ok := po.val.(*Commit)
	if !ok {
		return nil
	}
	out := appendHintObject(nil, po.data)
	level := []Hash{c.Tree}
	for len(level) > 0 {
		var below []Hash
		for _, h := range level {
			o, ok := own[h]
			if !ok {
				continue
			}
			n, ok := o.val.(*node)
			if !ok || n.level == 0 {
				continue
			}
			if len(out)+len(o.data)+binary.MaxVarintLen64 > maxHintBytes {
				return out
			}
			out = appendHintObject(out, o.data)
			below = append(below, n.hashes...)
		}
		level = below
	}
	return out
}

func appendHintObject(b, data []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(data)))
	return append(b, data...)
}

// adoptHint caches the objects of a hint that LockRef returned. It stops
// at the first malformed entry; what it does not cache is read as usual.
func (s *Store) adoptHint(hint []byte) {
	for first := true; len(hint) > 0; first = false {
		n, k := binary.Uvarint(hint)
		if k <= 0 || n > uint64(len(hint)-k) {
			return
		}
		data := hint[k : k+int(n)]
		hint = hint[k+int(n):]
		h := hashOf(data)
		if _, ok := s.cache.get(h); ok {
			continue
		}
		var (
			v   any
			err error
		)
		if first {
			var c *Commit
			if c, err = decodeCommit(data); err == nil {
				c.Hash = h
				v = c
			}
		} else {
			v, err = decodeNode(data)
		}
		if err != nil {
			return
		}
		s.cache.add(h, v, footprint(v, len(data)))
	}
}
