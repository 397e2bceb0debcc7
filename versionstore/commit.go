package versionstore

import (
	"fmt"
	"maps"
	"time"
)

// OperationKind says what a commit did to a key.
type OperationKind uint8

// Operation kinds. Put and Delete are stored in commits; Unchanged is only
// checked (read-set validation) and never stored, as in Nessie.
const (
	OpPut       OperationKind = 1
	OpDelete    OperationKind = 2
	OpUnchanged OperationKind = 3
)

func (k OperationKind) String() string {
	switch k {
	case OpPut:
		return "PUT"
	case OpDelete:
		return "DELETE"
	case OpUnchanged:
		return "UNCHANGED"
	default:
		return fmt.Sprintf("UNKNOWN(%d)", uint8(k))
	}
}

// CommitOp is one stored operation of a commit: the key and, for a put,
// the hash of the value written.
type CommitOp struct {
	Kind  OperationKind
	Key   ContentKey
	Value Hash
}

// Commit is an immutable point in the catalog's history.
type Commit struct {
	Hash Hash // not encoded: the SHA-256 of the encoding

	// Parents are the first parent (the branch's previous head) and, for a
	// merge, the merged commit. A root commit's parent is NoAncestor.
	Parents []Hash
	Tree    Hash
	// Seq is a generation number: one more than the largest parent's, 0
	// for NoAncestor. Walks stop early with it.
	Seq        uint64
	Author     string
	AuthorTime time.Time
	Committer  string
	CommitTime time.Time
	Message    string
	Properties map[string]string
	Operations []CommitOp
}

// CommitMeta is what a client may say about a commit; the committer and
// commit time are always set by the store.
type CommitMeta struct {
	Author     string
	AuthorTime time.Time // zero: the commit time
	Message    string
	Properties map[string]string
}

// noAncestorCommit stands for the virtual commit before every root commit.
var noAncestorCommit = &Commit{Hash: NoAncestor, Tree: emptyTree}

// Parent returns the first parent.
func (c *Commit) Parent() Hash {
	if len(c.Parents) == 0 {
		return Hash{}
	}
	return c.Parents[0]
}

func encodeCommit(c *Commit) []byte {
	e := encoder{buf: make([]byte, 0, 256)}
	e.byte(kindCommit)
	e.byte(formatV1)
	e.uvarint(uint64(len(c.Parents)))
	for _, p := range c.Parents {
		e.hash(p)
	}
	e.hash(c.Tree)
	e.uvarint(c.Seq)
	e.string(c.Author)
	e.varint(c.AuthorTime.UnixMicro())
	e.string(c.Committer)
	e.varint(c.CommitTime.UnixMicro())
	e.string(c.Message)
	e.stringMap(c.Properties)
	e.uvarint(uint64(len(c.Operations)))
	for _, op := range c.Operations {
		e.byte(byte(op.Kind))
		e.bytes(op.Key.Encode())
		if op.Kind == OpPut {
			e.hash(op.Value)
		}
	}
	return e.buf
}

func decodeCommit(b []byte) (*Commit, error) {
	d := decoder{buf: b}
	d.header(kindCommit)
	c := &Commit{}
	np := d.count(len(Hash{}), "parents")
	if d.err == nil && (np == 0 || np > 2) {
		d.fail("commit has %d parents", np)
	}
	for i := 0; i < np && d.err == nil; i++ {
		c.Parents = append(c.Parents, d.hash())
	}
	c.Tree = d.hash()
	c.Seq = d.uvarint()
	if d.err == nil && c.Seq == 0 {
		d.fail("commit seq 0")
	}
	c.Author = d.string(maxStringBytes)
	c.AuthorTime = time.UnixMicro(d.varint()).UTC()
	c.Committer = d.string(maxStringBytes)
	c.CommitTime = time.UnixMicro(d.varint()).UTC()
	c.Message = d.string(maxStringBytes)
	c.Properties = d.stringMap()
	nops := d.count(2, "operations")
	for i := 0; i < nops && d.err == nil; i++ {
		op := CommitOp{Kind: OperationKind(d.byte())}
		kb := d.bytes(maxKeyBytes)
		if d.err != nil {
			break
		}
		k, err := DecodeKey(kb)
		if err != nil {
			return nil, fmt.Errorf("decode commit: %w", err)
		}
		op.Key = k
		switch op.Kind {
		case OpPut:
			op.Value = d.hash()
		case OpDelete:
		default:
			d.fail("operation kind %d", op.Kind)
		}
		c.Operations = append(c.Operations, op)
	}
	if err := d.finish(); err != nil {
		return nil, fmt.Errorf("decode commit: %w", err)
	}
	return c, nil
}

// clone returns a copy safe to hand to callers.
func (c *Commit) clone() *Commit {
	d := *c
	d.Parents = append([]Hash(nil), c.Parents...)
	d.Properties = maps.Clone(c.Properties)
	d.Operations = append([]CommitOp(nil), c.Operations...)
	return &d
}
