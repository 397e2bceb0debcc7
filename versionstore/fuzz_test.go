package versionstore

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"
	"time"
)

// The decoders read bytes from disk (and, through a shared SQL backend,
// from other processes): whatever they are given, they must return an
// error or a value that survives a round trip, and never panic.

func seedNode(f *testing.F) {
	f.Add(encodeNode(newNode(0, [][]byte{[]byte("a"), []byte("a\x00b"), []byte("ab")}, make([]Hash, 3))))
	f.Add(encodeNode(newNode(2, [][]byte{[]byte("zz")}, []Hash{hashOf([]byte("x"))})))
	f.Add([]byte{kindNode, formatV1, 0, 1, 0, 1})
}

func FuzzDecodeNode(f *testing.F) {
	seedNode(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := decodeNode(b)
		if err != nil {
			return
		}
		again, err := decodeNode(encodeNode(n))
		if err != nil {
			t.Fatalf("re-encoded node does not decode: %v", err)
		}
		if again.level != n.level || again.len() != n.len() {
			t.Fatal("node changed in a round trip")
		}
		for i := range n.len() {
			if !bytes.Equal(again.key(i), n.key(i)) || again.hashes[i] != n.hashes[i] {
				t.Fatalf("entry %d changed in a round trip", i)
			}
		}
	})
}

func FuzzDecodeCommit(f *testing.F) {
	now := time.Unix(1700000000, 123000).UTC()
	f.Add(encodeCommit(&Commit{Parents: []Hash{NoAncestor}, Seq: 1, Author: "a", AuthorTime: now, Committer: "c", CommitTime: now,
		Message: "m", Properties: map[string]string{"k": "v"},
		Operations: []CommitOp{{Kind: OpPut, Key: ContentKey{"ns", "t"}, Value: hashOf([]byte("v"))}, {Kind: OpDelete, Key: ContentKey{"x"}}}}))
	f.Add(encodeCommit(&Commit{Parents: []Hash{NoAncestor, hashOf(nil)}, Seq: 9}))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeCommit(b)
		if err != nil {
			return
		}
		again, err := decodeCommit(encodeCommit(c))
		if err != nil {
			t.Fatalf("re-encoded commit does not decode: %v", err)
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("commit changed in a round trip:\n%+v\n%+v", c, again)
		}
	})
}

func FuzzDecodeContent(f *testing.F) {
	f.Add(encodeContent(&Content{Type: Namespace, ID: "id", Properties: map[string]string{"owner": "x"}}))
	f.Add(encodeContent(&Content{Type: IcebergTable, ID: "id", MetadataLocation: "s3://b/t/m.json", SnapshotID: -1, SchemaID: 3}))
	f.Add(encodeContent(&Content{Type: IcebergView, MetadataLocation: "file:///v.json", VersionID: 4}))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := decodeContent(b)
		if err != nil {
			return
		}
		again, err := decodeContent(encodeContent(c))
		if err != nil {
			t.Fatalf("re-encoded content does not decode: %v", err)
		}
		if !again.Equal(c) {
			t.Fatalf("content changed in a round trip:\n%+v\n%+v", c, again)
		}
	})
}

func FuzzDecodeRef(f *testing.F) {
	f.Add(encodeRef(&Ref{Name: "main", Type: Branch, Head: NoAncestor, Created: time.Unix(1, 0), Retention: Retention{MaxRefAge: time.Hour, MinSnapshotsToKeep: 3}}))
	f.Add(encodeRefLog(&RefLogEntry{Ref: "dev", RefType: Tag, Op: RefLogAssign, From: NoAncestor, Principal: "p", Time: time.Unix(5, 0)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if r, err := decodeRef(b); err == nil {
			again, err := decodeRef(encodeRef(r))
			if err != nil || again.Name != r.Name || again.Head != r.Head || again.Type != r.Type || again.Retention != r.Retention {
				t.Fatalf("ref changed in a round trip: %v", err)
			}
		}
		if e, err := decodeRefLog(7, b); err == nil {
			again, err := decodeRefLog(7, encodeRefLog(e))
			if err != nil || !reflect.DeepEqual(again, e) {
				t.Fatalf("ref log entry changed in a round trip: %v", err)
			}
		}
	})
}

func FuzzDecodeKey(f *testing.F) {
	f.Add([]byte("ns\x00table"))
	f.Add([]byte("a"))
	f.Add([]byte("\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := DecodeKey(b)
		if err != nil {
			return
		}
		if !bytes.Equal(k.Encode(), b) {
			t.Fatalf("key %q re-encodes as %q", b, k.Encode())
		}
	})
}

// TestTruncatedObjects checks every prefix of valid encodings fails cleanly.
func TestTruncatedObjects(t *testing.T) {
	t.Parallel()
	now := time.Unix(1700000000, 0).UTC()
	objs := map[string][]byte{
		"node":    encodeNode(newNode(1, [][]byte{[]byte("a"), []byte("b")}, make([]Hash, 2))),
		"commit":  encodeCommit(&Commit{Parents: []Hash{NoAncestor}, Seq: 1, CommitTime: now, Operations: []CommitOp{{Kind: OpPut, Key: ContentKey{"k"}}}}),
		"content": encodeContent(&Content{Type: IcebergTable, MetadataLocation: "x", Properties: nil}),
		"ref":     encodeRef(&Ref{Name: "main", Type: Branch}),
	}
	decoders := map[string]func([]byte) error{
		"node":    func(b []byte) error { _, err := decodeNode(b); return err },
		"commit":  func(b []byte) error { _, err := decodeCommit(b); return err },
		"content": func(b []byte) error { _, err := decodeContent(b); return err },
		"ref":     func(b []byte) error { _, err := decodeRef(b); return err },
	}
	for name, b := range objs {
		dec := decoders[name]
		if err := dec(b); err != nil {
			t.Fatalf("%s: full encoding fails: %v", name, err)
		}
		for i := 0; i < len(b); i++ {
			if err := dec(b[:i]); err == nil {
				t.Fatalf("%s truncated to %d of %d bytes decoded", name, i, len(b))
			}
		}
		if err := dec(append(bytes.Clone(b), 0)); err == nil {
			t.Fatalf("%s with a trailing byte decoded", name)
		}
	}
}

// FuzzAdoptHint: a ref's hint comes from the database, written by another
// replica; whatever it holds, adopting it must not panic, and every object
// it caches is stored under the hash of bytes that decode to it.
func FuzzAdoptHint(f *testing.F) {
	now := time.Unix(1700000000, 0).UTC()
	commit := encodeCommit(&Commit{Parents: []Hash{NoAncestor}, Seq: 1, Tree: hashOf([]byte("t")), Committer: "c", CommitTime: now, AuthorTime: now})
	inner := encodeNode(newNode(1, [][]byte{[]byte("k")}, []Hash{hashOf([]byte("x"))}))
	f.Add(appendHintObject(appendHintObject(nil, commit), inner))
	f.Add(appendHintObject(nil, inner))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, hint []byte) {
		s := &Store{cache: newObjectCache(1 << 20)}
		s.adoptHint(hint)
		for rest := hint; len(rest) > 0; {
			n, k := binary.Uvarint(rest)
			if k <= 0 || n > uint64(len(rest)-k) {
				break
			}
			data := rest[k : k+int(n)]
			rest = rest[k+int(n):]
			v, ok := s.cache.get(hashOf(data))
			if !ok {
				continue
			}
			var again []byte
			switch x := v.(type) {
			case *Commit:
				again = encodeCommit(x)
			case *node:
				again = encodeNode(x)
			default:
				t.Fatalf("hint cached a %T", v)
			}
			if _, err := decodeCommit(again); err != nil {
				if _, err := decodeNode(again); err != nil {
					t.Fatalf("cached object does not decode again: %v", err)
				}
			}
		}
	})
}
