package storeexport

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
)

// The file format, version 1 (README.md, "Format", is the reference):
//
//	file    = magic entry* ; optionally the whole file gzip-compressed
//	magic   = "FLOE-EXPORT\n"
//	entry   = kind:byte length:uvarint payload:length bytes
//
// The entries come in this order: one header, the objects in ascending id
// order, the reference log oldest first, the records in key order, the
// references in name order, one trailer, then the end of the file.
const magic = "FLOE-EXPORT\n"

// Version is the format version this build writes and reads.
const Version = 1

// Entry kinds.
const (
	kindHeader  byte = 'H' // JSON Header
	kindObject  byte = 'O' // 32-byte id, then the object's bytes
	kindLog     byte = 'L' // one reference log value, as the backend stores it
	kindRecord  byte = 'K' // uvarint key length, key, value
	kindRef     byte = 'R' // uvarint name length, name, value
	kindTrailer byte = 'T' // JSON Trailer
)

// maxEntry bounds one entry's payload, so that a corrupt length cannot make
// the reader wait for or allocate absurd amounts. It is far above anything
// the store writes (its own decoders cap strings at 16 MiB).
const maxEntry = 256 << 20

// gzipMagic starts every gzip stream; Import recognises a compressed file
// by it.
var gzipMagic = []byte{0x1f, 0x8b}

// ErrFormat reports a file that is not a complete, intact export: a wrong
// magic or version, entries out of order, a checksum, count or object hash
// that does not match, or a missing trailer (a truncated file).
var ErrFormat = errors.New("not a valid floe export")

// Header is the first entry: what wrote the file, and from where.
type Header struct {
	Format  string `json:"format"` // always "floe-export"
	Version int    `json:"version"`
	// Created is when the export began (RFC 3339, UTC).
	Created string `json:"created"`
	// Source describes the exported store, for people (e.g. "pebble:/var/lib/floe").
	Source string `json:"source,omitempty"`
	// Producer names the program, e.g. "floe v0.3.0".
	Producer string `json:"producer,omitempty"`
}

// Trailer is the last entry. Its counts and checksum let Import tell a
// complete file from a truncated or altered one before it makes anything
// visible.
type Trailer struct {
	Objects     int64 `json:"objects"`
	ObjectBytes int64 `json:"objectBytes"`
	Log         int64 `json:"log"`
	Records     int64 `json:"records"`
	Refs        int64 `json:"refs"`
	// SHA256 is the hex SHA-256 of every uncompressed byte before the
	// trailer entry, the magic included.
	SHA256 string `json:"sha256"`
}

// entryWriter frames entries and hashes everything it writes.
type entryWriter struct {
	w   *bufio.Writer
	sum hash.Hash
	buf [binary.MaxVarintLen64 + 1]byte
	n   int64 // bytes written
}

func newEntryWriter(w io.Writer) *entryWriter {
	return &entryWriter{w: bufio.NewWriterSize(w, 1<<20), sum: sha256.New()}
}

func (e *entryWriter) raw(b []byte) error {
	e.sum.Write(b)
	e.n += int64(len(b))
	_, err := e.w.Write(b)
	return err
}

// entry writes one entry whose payload is the concatenation of parts.
func (e *entryWriter) entry(kind byte, parts ...[]byte) error {
	size := 0
	for _, p := range parts {
		size += len(p)
	}
	if size > maxEntry {
		return fmt.Errorf("entry of kind %q is %d bytes, more than the format's %d", kind, size, maxEntry)
	}
	e.buf[0] = kind
	n := binary.PutUvarint(e.buf[1:], uint64(size))
	if err := e.raw(e.buf[:1+n]); err != nil {
		return err
	}
	for _, p := range parts {
		if err := e.raw(p); err != nil {
			return err
		}
	}
	return nil
}

// entryReader reads entries and hashes everything it reads.
type entryReader struct {
	r   *bufio.Reader
	sum hash.Hash
	n   int64 // bytes read
	buf bytes.Buffer
}

func newEntryReader(r io.Reader) *entryReader {
	return &entryReader{r: bufio.NewReaderSize(r, 1<<20), sum: sha256.New()}
}

func (e *entryReader) readMagic() error {
	b := make([]byte, len(magic))
	if _, err := io.ReadFull(e.r, b); err != nil || string(b) != magic {
		return fmt.Errorf("%w: the file does not start with %q", ErrFormat, magic)
	}
	e.sum.Write(b)
	e.n += int64(len(b))
	return nil
}

// next returns the next entry's kind and payload; the payload is only
// valid until the next call. At the end of the file it returns io.EOF.
// sumBefore is the checksum of everything before this entry.
func (e *entryReader) next() (kind byte, payload []byte, sumBefore []byte, err error) {
	sumBefore = e.sum.Sum(nil)
	kind, err = e.r.ReadByte()
	if err == io.EOF {
		return 0, nil, nil, io.EOF
	}
	if err != nil {
		return 0, nil, nil, err
	}
	size, err := binary.ReadUvarint(e.r)
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%w: entry at byte %d: truncated length: %v", ErrFormat, e.n, err)
	}
	if size > maxEntry {
		return 0, nil, nil, fmt.Errorf("%w: entry at byte %d claims %d bytes, more than the format's %d", ErrFormat, e.n, size, maxEntry)
	}
	var hdr [binary.MaxVarintLen64 + 1]byte
	hdr[0] = kind
	hn := 1 + binary.PutUvarint(hdr[1:], size)
	// Copy rather than allocate size up front: a corrupt length then costs
	// only the bytes actually present.
	e.buf.Reset()
	got, err := io.CopyN(&e.buf, e.r, int64(size))
	if err != nil {
		return 0, nil, nil, fmt.Errorf("%w: entry at byte %d: truncated after %d of its %d bytes", ErrFormat, e.n, got, size)
	}
	e.sum.Write(hdr[:hn])
	e.sum.Write(e.buf.Bytes())
	e.n += int64(hn) + int64(size)
	return kind, e.buf.Bytes(), sumBefore, nil
}

// splitNamed splits a record or ref payload into its name and value.
func splitNamed(p []byte) (string, []byte, error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > uint64(len(p)-k) {
		return "", nil, errors.New("malformed name length")
	}
	return string(p[k : k+int(n)]), p[k+int(n):], nil
}

func namedPrefix(name string) []byte {
	b := binary.AppendUvarint(nil, uint64(len(name)))
	return append(b, name...)
}
