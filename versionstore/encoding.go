package versionstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Every stored object starts with a kind byte and a format version byte, so
// a decoder can reject bytes that are not what it expects and a later format
// can be introduced without ambiguity.
const (
	kindContent byte = 'v'
	kindNode    byte = 'n'
	kindCommit  byte = 'c'
	kindRef     byte = 'r'
	kindRefLog  byte = 'l'
	// 'b' was reserved for blobs, which nothing stored; do not reuse it.

	formatV1 byte = 1
)

// Limits that keep decoders from allocating absurd amounts for corrupt input.
const (
	maxKeyElements  = 64
	maxElementBytes = 1024
	maxStringBytes  = 16 << 20
	maxListLen      = 1 << 24
)

// ErrCorrupt reports stored bytes that do not decode.
var ErrCorrupt = errors.New("corrupt object")

// encoder appends the canonical binary encoding.
type encoder struct{ buf []byte }

func (e *encoder) byte(b byte)      { e.buf = append(e.buf, b) }
func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) varint(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }
func (e *encoder) bytes(b []byte)   { e.uvarint(uint64(len(b))); e.buf = append(e.buf, b...) }
func (e *encoder) string(s string)  { e.uvarint(uint64(len(s))); e.buf = append(e.buf, s...) }
func (e *encoder) hash(h Hash)      { e.buf = append(e.buf, h[:]...) }
func (e *encoder) bool(b bool) {
	if b {
		e.byte(1)
	} else {
		e.byte(0)
	}
}

// stringMap encodes a map in sorted key order so equal maps encode equally.
func (e *encoder) stringMap(m map[string]string) {
	keys := sortedKeys(m)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.string(k)
		e.string(m[k])
	}
}

// decoder reads the canonical encoding; the first error sticks and every
// later read returns zero values, so callers check err once at the end.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.buf) < 1 {
		d.fail("truncated")
		return 0
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.buf)
	if n <= 0 {
		d.fail("bad uvarint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.buf)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

// length reads a length prefix and checks it against max and the bytes left.
func (d *decoder) length(max int, what string) int {
	n := d.uvarint()
	if d.err != nil {
		return 0
	}
	if n > uint64(max) {
		d.fail("%s length %d exceeds %d", what, n, max)
		return 0
	}
	return int(n)
}

func (d *decoder) rawBytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || len(d.buf) < n {
		d.fail("truncated")
		return nil
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}

func (d *decoder) bytes(max int) []byte {
	n := d.length(max, "bytes")
	return d.rawBytes(n)
}

func (d *decoder) string(max int) string { return string(d.bytes(max)) }

func (d *decoder) hash() Hash {
	var h Hash
	copy(h[:], d.rawBytes(len(h)))
	return h
}

func (d *decoder) bool() bool {
	switch b := d.byte(); b {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail("bad bool %d", b)
		return false
	}
}

func (d *decoder) int32() int32 {
	v := d.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		d.fail("int32 out of range")
		return 0
	}
	return int32(v)
}

// count reads a list length, bounded by max and by the bytes left (each
// element takes at least minBytes), so corrupt input cannot force a huge
// allocation.
func (d *decoder) count(minBytes int, what string) int {
	n := d.length(maxListLen, what)
	if d.err == nil && minBytes > 0 && n > len(d.buf)/minBytes {
		d.fail("%s count %d exceeds remaining bytes", what, n)
		return 0
	}
	return n
}

func (d *decoder) stringMap() map[string]string {
	n := d.count(2, "map")
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	prev := ""
	for i := 0; i < n && d.err == nil; i++ {
		k := d.string(maxStringBytes)
		v := d.string(maxStringBytes)
		if i > 0 && k <= prev {
			d.fail("map keys not strictly sorted")
		}
		prev = k
		m[k] = v
	}
	return m
}

// header checks the kind and version bytes.
func (d *decoder) header(kind byte) {
	if k := d.byte(); d.err == nil && k != kind {
		d.fail("kind %q, want %q", k, kind)
	}
	if v := d.byte(); d.err == nil && v != formatV1 {
		d.fail("unknown format version %d", v)
	}
}

// finish reports trailing bytes as corruption and returns the sticky error.
func (d *decoder) finish() error {
	if d.err == nil && len(d.buf) != 0 {
		d.fail("%d trailing bytes", len(d.buf))
	}
	return d.err
}
