package versionstore

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
)

// node is one decoded tree node. At level 0 (a leaf) entry i maps key(i) to
// the hash of a content value; above, entry i points at a child node of the
// level below whose last key is key(i). Keys are strictly increasing and a
// stored node is never empty.
//
// The keys are packed into one byte slice, so a node holds no pointers
// but its three slices: the object cache keeps many thousands of nodes, and
// the garbage collector would otherwise follow a pointer per key in each.
type node struct {
	level  int
	keyBuf []byte   // every key, concatenated
	ends   []uint32 // ends[i] is where key i ends in keyBuf
	hashes []Hash
	size   int // approximate memory footprint, for cache accounting
}

// newNode packs keys into a node; it copies the key bytes.
func newNode(level int, keys [][]byte, hashes []Hash) *node {
	total := 0
	for _, k := range keys {
		total += len(k)
	}
	n := &node{level: level, keyBuf: make([]byte, 0, total), ends: make([]uint32, len(keys)), hashes: hashes}
	for i, k := range keys {
		n.keyBuf = append(n.keyBuf, k...)
		n.ends[i] = uint32(len(n.keyBuf))
	}
	return n
}

// len returns the number of entries.
func (n *node) len() int { return len(n.ends) }

// key returns key i; the slice must not be changed.
func (n *node) key(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = n.ends[i-1]
	}
	return n.keyBuf[start:n.ends[i]:n.ends[i]]
}

// nodeFootprint estimates a decoded node's memory: its key bytes, an offset
// and a hash per entry, and the struct itself.
func nodeFootprint(keyBytes, entries int) int { return keyBytes + entries*(4+len(Hash{})) + 96 }

// maxNodeLevel bounds the height of a tree; with a fan-out of 64 it allows
// far more keys than any catalog holds.
const maxNodeLevel = 16

// levelBits sets the expected fan-out: a key closes a node at level L when
// its level exceeds L, which happens with probability 2^-levelBits. A
// fan-out of 16 keeps nodes near 1 KiB: a one-key commit rewrites a few
// small nodes, which matters more for write volume and CPU than the extra
// tree level costs reads.
const levelBits = 4

// keyLevel is the height at which a key becomes a node boundary. It depends
// only on the key, which makes a tree's shape a function of its key set
// (history independence): equal key sets give equal trees, so diffs can skip
// equal subtrees. FNV-1a is stable across processes and versions; the
// finalizer spreads its weak low bits.
func keyLevel(key []byte) int {
	x := uint64(14695981039346656037) // FNV-1a 64, inlined to avoid allocating a hash.Hash
	for _, c := range key {
		x ^= uint64(c)
		x *= 1099511628211
	}
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return bits.TrailingZeros64(x|1<<63) / levelBits
}

// isBoundary reports whether an entry with this key ends a node at level.
func isBoundary(key []byte, level int) bool { return keyLevel(key) > level }

func encodeNode(n *node) []byte {
	entries := n.len()
	// Enough for any real node, so the buffer is allocated once: prefix
	// compression only shrinks keys, and lengths fit in three varint bytes.
	size := 2 + 2*binary.MaxVarintLen16 + len(n.keyBuf) + entries*(len(Hash{})+2*binary.MaxVarintLen16)
	e := encoder{buf: make([]byte, 0, size)}
	e.byte(kindNode)
	e.byte(formatV1)
	e.uvarint(uint64(n.level))
	e.uvarint(uint64(entries))
	var prev []byte
	for i := range entries {
		k := n.key(i)
		shared := commonPrefix(prev, k)
		e.uvarint(uint64(shared))
		e.bytes(k[shared:])
		e.hash(n.hashes[i])
		prev = k
	}
	return e.buf
}

func decodeNode(b []byte) (*node, error) {
	d := decoder{buf: b}
	d.header(kindNode)
	level := d.uvarint()
	if d.err == nil && level > maxNodeLevel {
		d.fail("node level %d exceeds %d", level, maxNodeLevel)
	}
	n := d.count(2+len(Hash{}), "node entries")
	if d.err == nil && n == 0 {
		d.fail("empty node")
	}
	if d.err != nil {
		return nil, fmt.Errorf("decode node: %w", d.err)
	}
	nd := &node{level: int(level), ends: make([]uint32, n), hashes: make([]Hash, n)}
	arena := make([]byte, 0, len(b))
	var prev []byte
	for i := 0; i < n && d.err == nil; i++ {
		shared := d.length(maxKeyBytes, "shared prefix")
		suffix := d.bytes(maxKeyBytes)
		if d.err == nil && shared > len(prev) {
			d.fail("shared prefix %d longer than previous key", shared)
		}
		if d.err != nil {
			break
		}
		start := len(arena)
		arena = append(arena, prev[:shared]...)
		arena = append(arena, suffix...)
		key := arena[start:len(arena):len(arena)]
		if len(key) == 0 || len(key) > maxKeyBytes {
			d.fail("key length %d", len(key))
		} else if i > 0 && bytes.Compare(prev, key) >= 0 {
			d.fail("keys not strictly increasing")
		}
		nd.ends[i] = uint32(len(arena))
		nd.hashes[i] = d.hash()
		prev = key
	}
	if err := d.finish(); err != nil {
		return nil, fmt.Errorf("decode node: %w", err)
	}
	nd.keyBuf = arena
	nd.size = nodeFootprint(cap(arena), n)
	return nd, nil
}

// maxKeyBytes bounds an encoded key.
const maxKeyBytes = maxKeyElements * (maxElementBytes + 1)

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// search returns the index of the first entry whose key is >= key, or
// len(keys) if there is none.
func (n *node) search(key []byte) int {
	lo, hi := 0, n.len()
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if bytes.Compare(n.key(m), key) < 0 {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

func (n *node) lastKey() []byte { return n.key(n.len() - 1) }
