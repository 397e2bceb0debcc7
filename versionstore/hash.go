package versionstore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// Hash names an object: the SHA-256 of its canonical encoding.
type Hash = backend.ObjectID

// NoAncestor is the parent of every root commit and the head of a new,
// empty branch. It is not a stored object; as in Nessie it is the SHA-256 of
// the string "empty", so clients that know Nessie recognise it.
var NoAncestor = Hash(sha256.Sum256([]byte("empty")))

// emptyTree is the root of the tree that holds no keys. It is not stored.
var emptyTree Hash

// ParseHash parses a full 64-character hex hash.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if len(s) != 2*len(h) {
		return h, fmt.Errorf("%w: hash %q must have %d hex digits", ErrInvalid, s, 2*len(h))
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("%w: hash %q is not hex", ErrInvalid, s)
	}
	return h, nil
}

func hashOf(b []byte) Hash { return Hash(sha256.Sum256(b)) }
