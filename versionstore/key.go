package versionstore

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// ContentKey names an entry of the catalog: namespace elements followed by
// the entry's name. A namespace's own key is just its elements.
type ContentKey []string

// keySeparator joins elements in the encoded form. Elements may not contain
// it, so byte order of encoded keys is element-wise lexicographic order and
// the keys inside a namespace form one contiguous range.
const keySeparator = 0x00

// Limits on the keys of new content. They are tighter than what the
// encoding holds (maxElementBytes, maxKeyBytes), which stay the bounds of
// Validate and of decoding, so a key stored before these limits existed is
// still read, listed and deleted; only a put refuses it.
const (
	// MaxNewKeyElementBytes bounds one element: the usual file-name limit
	// (NAME_MAX), since APIs turn namespaces and names into directories.
	MaxNewKeyElementBytes = 255
	// MaxNewKeyBytes bounds the whole key, elements plus one separator
	// between each, so that a warehouse path built from it stays well
	// inside the usual path limit (PATH_MAX, 4096 bytes).
	MaxNewKeyBytes = 2048
)

// ValidateNew checks a key that content is being put under: Validate's
// rules plus the limits on new keys.
func (k ContentKey) ValidateNew() error {
	if err := k.Validate(); err != nil {
		return err
	}
	n := len(k) - 1
	for i, e := range k {
		if len(e) > MaxNewKeyElementBytes {
			return fmt.Errorf("%w: content key element %d is %d bytes, at most %d allowed", ErrInvalid, i, len(e), MaxNewKeyElementBytes)
		}
		n += len(e)
	}
	if n > MaxNewKeyBytes {
		return fmt.Errorf("%w: content key is %d bytes (elements and separators), at most %d allowed", ErrInvalid, n, MaxNewKeyBytes)
	}
	return nil
}

// Validate checks the key's shape against what the store can hold; keys of
// new content must also pass ValidateNew.
func (k ContentKey) Validate() error {
	if len(k) == 0 {
		return fmt.Errorf("%w: content key has no elements", ErrInvalid)
	}
	if len(k) > maxKeyElements {
		return fmt.Errorf("%w: content key has %d elements, at most %d allowed", ErrInvalid, len(k), maxKeyElements)
	}
	for i, e := range k {
		switch {
		case e == "":
			return fmt.Errorf("%w: content key %q has an empty element at %d", ErrInvalid, k.String(), i)
		case len(e) > maxElementBytes:
			return fmt.Errorf("%w: content key element %d is %d bytes, at most %d allowed", ErrInvalid, i, len(e), maxElementBytes)
		case strings.IndexByte(e, keySeparator) >= 0:
			return fmt.Errorf("%w: content key element %d contains a NUL byte", ErrInvalid, i)
		case !utf8.ValidString(e):
			return fmt.Errorf("%w: content key element %d is not valid UTF-8", ErrInvalid, i)
		}
	}
	return nil
}

// Encode returns the byte form used in trees: elements joined by NUL.
func (k ContentKey) Encode() []byte {
	n := len(k)
	for _, e := range k {
		n += len(e)
	}
	b := make([]byte, 0, n)
	for i, e := range k {
		if i > 0 {
			b = append(b, keySeparator)
		}
		b = append(b, e...)
	}
	return b
}

// String joins the elements with dots, for messages and logs.
func (k ContentKey) String() string { return strings.Join(k, ".") }

// Parent returns the key of the enclosing namespace, or nil at top level.
func (k ContentKey) Parent() ContentKey {
	if len(k) <= 1 {
		return nil
	}
	return k[: len(k)-1 : len(k)-1]
}

// Equal reports element-wise equality.
func (k ContentKey) Equal(o ContentKey) bool {
	if len(k) != len(o) {
		return false
	}
	for i := range k {
		if k[i] != o[i] {
			return false
		}
	}
	return true
}

// Compare orders keys element-wise, the order of every listing.
func (k ContentKey) Compare(o ContentKey) int { return bytes.Compare(k.Encode(), o.Encode()) }

// DecodeKey is the inverse of Encode.
func DecodeKey(b []byte) (ContentKey, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty encoded key", ErrCorrupt)
	}
	k := ContentKey(strings.Split(string(b), string(rune(keySeparator))))
	if err := k.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	return k, nil
}

// prefixRange returns the encoded bounds [lo, hi) of the key itself and
// every key below it.
func prefixRange(k ContentKey) (lo, hi []byte) {
	lo = k.Encode()
	hi = append(bytes.Clone(lo), keySeparator+1)
	return lo, hi
}

// childRange returns the bounds of keys strictly below k.
func childRange(k ContentKey) (lo, hi []byte) {
	lo = append(k.Encode(), keySeparator)
	hi = append(k.Encode(), keySeparator+1)
	return lo, hi
}
