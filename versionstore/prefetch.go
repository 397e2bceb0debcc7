package versionstore

import (
	"context"
	"time"
)

// Prefetching tree paths.
//
// On a shared backend a round often starts on a head another replica wrote:
// the root and the inner nodes on its commits' paths are new to this
// process, and reading them as the commits are applied costs one round trip
// per node, while the round holds the reference's row lock (or loses its
// turn for it). When the backend reads many objects at once, the round first
// reads the nodes on the paths of every key it will look up, one round trip
// per tree level. It is an optimisation only: whatever it does not read, or
// fails to, the commits read as before, and report.

// prefetchTimeout bounds the prefetch's reads, so a slow database costs
// the round little more than it would have paid anyway.
const prefetchTimeout = 5 * time.Second

// prefetch reads the nodes of the tree at root that lie on the paths to
// keys and that neither ov nor the cache holds.
func (s *Store) prefetch(ov *overlay, root Hash, keys [][]byte) {
	if s.multi == nil || root == emptyTree || len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), prefetchTimeout)
	defer cancel()
	at := make([]Hash, len(keys)) // each key's node on the current level
	for i := range at {
		at[i] = root
	}
	for {
		nodes := make(map[Hash]*node, len(keys))
		var missing []Hash
		for _, h := range at {
			if _, ok := nodes[h]; ok {
				continue
			}
			n := s.cachedNode(ov, h)
			nodes[h] = n
			if n == nil {
				missing = append(missing, h)
			}
		}
		if len(missing) > 0 {
			for h, n := range s.fetchNodes(ctx, missing) {
				nodes[h] = n
			}
		}
		next := at[:0]
		var nextKeys [][]byte
		for i, h := range at {
			n := nodes[h]
			if n == nil || n.level == 0 || n.len() == 0 {
				continue // a leaf, or a node the commits will read themselves
			}
			next = append(next, n.hashes[min(n.search(keys[i]), n.len()-1)])
			nextKeys = append(nextKeys, keys[i])
		}
		if len(next) == 0 {
			return
		}
		at, keys = next, nextKeys
	}
}

// cachedNode returns the node if ov or the cache holds it, without reading
// the backend.
func (s *Store) cachedNode(ov *overlay, h Hash) *node {
	v, ok := ov.find(h)
	if !ok {
		v, ok = s.cache.get(h)
	}
	if !ok {
		return nil
	}
	n, _ := v.(*node)
	return n
}

// fetchNodes reads the nodes in one backend call and caches those that
// exist, match their hash and decode; the others are left to the reads
// that need them, which report what is wrong.
func (s *Store) fetchNodes(ctx context.Context, hs []Hash) map[Hash]*node {
	data, err := s.multi.GetObjects(ctx, hs)
	if err != nil || len(data) != len(hs) {
		return nil
	}
	out := make(map[Hash]*node, len(hs))
	for i, d := range data {
		if d == nil || hashOf(d) != hs[i] {
			continue
		}
		n, err := decodeNode(d)
		if err != nil {
			continue
		}
		s.cache.add(hs[i], n, footprint(n, len(d)))
		out[hs[i]] = n
	}
	return out
}
