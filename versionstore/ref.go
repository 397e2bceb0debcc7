package versionstore

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// RefType distinguishes branches from tags. Values are stored.
type RefType uint8

const (
	// Branch is a movable reference that commits land on.
	Branch RefType = 1
	// Tag is a reference that only moves when assigned explicitly.
	Tag RefType = 2
)

func (t RefType) String() string {
	switch t {
	case Branch:
		return "BRANCH"
	case Tag:
		return "TAG"
	default:
		return fmt.Sprintf("UNKNOWN(%d)", uint8(t))
	}
}

// Retention holds a reference's expiry settings, applied by a later
// garbage collector. Zero values mean "keep".
type Retention struct {
	MaxRefAge          time.Duration // delete the ref when its head is older
	MaxSnapshotAge     time.Duration // expire Iceberg snapshots older than this
	MinSnapshotsToKeep int32         // but always keep this many
}

// Ref is a branch or tag and the commit it points at. Refs handed out by
// the store are immutable snapshots.
type Ref struct {
	Name      string
	Type      RefType
	Head      Hash
	Created   time.Time
	Retention Retention

	raw []byte // the stored encoding, the compare-and-swap value
}

// maxRefNameBytes bounds reference names.
const maxRefNameBytes = 256

// ValidateRefName checks a branch or tag name against Nessie's rule: it
// starts with a letter, holds only letters, digits and ./_-, does not end
// with '.' or '/', and contains no ".." or "//". It is on the path of every
// read, so it is a byte loop rather than a regular expression.
func ValidateRefName(name string) error {
	if !validRefName(name) {
		return fmt.Errorf("%w: invalid reference name %q: must start with a letter, contain only letters, digits and ./_-, and not contain '..' or '//' or end with '.' or '/'", ErrInvalid, name)
	}
	return nil
}

// ValidateNewRefName checks the name of a reference being created:
// ValidateRefName's rule, and it must not read as a commit hash or hash
// abbreviation (8 to 64 hex digits, see Resolve), so that hash notation can
// never be captured by a reference. A reference created with such a name
// before this rule existed keeps working where only a name is expected and
// is reached explicitly as "name@" (see Resolve).
func ValidateNewRefName(name string) error {
	if err := ValidateRefName(name); err != nil {
		return err
	}
	if LooksLikeHash(name) {
		return fmt.Errorf("%w: invalid reference name %q: a name of 8 to 64 hex digits would read as a commit hash", ErrInvalid, name)
	}
	return nil
}

// LooksLikeHash reports whether s has the form of a full or abbreviated
// commit hash: 8 to 64 hex digits.
func LooksLikeHash(s string) bool {
	if len(s) < minHashDigits || len(s) > 2*len(Hash{}) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9') && !('a' <= c && c <= 'f') && !('A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// minHashDigits is the shortest hash abbreviation Resolve accepts.
const minHashDigits = 8

func validRefName(name string) bool {
	if len(name) == 0 || len(name) > maxRefNameBytes || !isLetter(name[0]) {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		switch {
		case isLetter(c) || ('0' <= c && c <= '9') || c == '_' || c == '-':
		case c == '.' || c == '/':
			if name[i-1] == c || i == len(name)-1 {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') }

func encodeRef(r *Ref) []byte {
	e := encoder{buf: make([]byte, 0, 96+len(r.Name))}
	e.byte(kindRef)
	e.byte(formatV1)
	e.string(r.Name)
	e.byte(byte(r.Type))
	e.hash(r.Head)
	e.varint(r.Created.UnixMicro())
	e.varint(int64(r.Retention.MaxRefAge))
	e.varint(int64(r.Retention.MaxSnapshotAge))
	e.varint(int64(r.Retention.MinSnapshotsToKeep))
	return e.buf
}

func decodeRef(b []byte) (*Ref, error) {
	d := decoder{buf: b}
	d.header(kindRef)
	r := &Ref{raw: b}
	r.Name = d.string(maxRefNameBytes)
	r.Type = RefType(d.byte())
	r.Head = d.hash()
	r.Created = time.UnixMicro(d.varint()).UTC()
	r.Retention.MaxRefAge = time.Duration(d.varint())
	r.Retention.MaxSnapshotAge = time.Duration(d.varint())
	r.Retention.MinSnapshotsToKeep = d.int32()
	if err := d.finish(); err != nil {
		return nil, fmt.Errorf("decode ref: %w", err)
	}
	if r.Type != Branch && r.Type != Tag {
		return nil, fmt.Errorf("decode ref %q: %w: type %d", r.Name, ErrCorrupt, r.Type)
	}
	return r, nil
}

// withRaw returns r with its encoding filled in.
func (r *Ref) withRaw() *Ref {
	r.raw = encodeRef(r)
	return r
}

// refMirror holds every reference in memory so that resolving and listing
// never touch the backend or take a lock. Each ref's slot is written only by
// that ref's committer; the table itself is replaced copy-on-write when refs
// are created or deleted, which is rare.
type refMirror struct {
	mu    sync.Mutex // serializes table replacement
	table atomic.Pointer[refTable]
}

type refTable struct {
	byName map[string]*refSlot
	sorted []*refSlot // by name
}

type refSlot struct {
	name string
	ref  atomic.Pointer[Ref]
}

func newRefMirror(refs []*Ref) *refMirror {
	t := &refTable{byName: make(map[string]*refSlot, len(refs))}
	for _, r := range refs {
		s := &refSlot{name: r.Name}
		s.ref.Store(r)
		t.byName[r.Name] = s
		t.sorted = append(t.sorted, s)
	}
	slices.SortFunc(t.sorted, func(a, b *refSlot) int { return strings.Compare(a.name, b.name) })
	m := &refMirror{}
	m.table.Store(t)
	return m
}

func (m *refMirror) get(name string) *Ref {
	if s, ok := m.table.Load().byName[name]; ok {
		return s.ref.Load()
	}
	return nil
}

func (m *refMirror) list() []*Ref {
	t := m.table.Load()
	out := make([]*Ref, 0, len(t.sorted))
	for _, s := range t.sorted {
		out = append(out, s.ref.Load())
	}
	return out
}

// set records the new state of one ref (nil: deleted).
func (m *refMirror) set(name string, r *Ref) {
	if s, ok := m.table.Load().byName[name]; ok && r != nil {
		s.ref.Store(r)
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.table.Load()
	t := &refTable{byName: make(map[string]*refSlot, len(old.byName)+1)}
	for _, s := range old.sorted {
		if s.name == name {
			continue
		}
		t.byName[s.name] = s
		t.sorted = append(t.sorted, s)
	}
	if r != nil {
		s := &refSlot{name: name}
		s.ref.Store(r)
		t.byName[name] = s
		i, _ := slices.BinarySearchFunc(t.sorted, name, func(s *refSlot, n string) int { return strings.Compare(s.name, n) })
		t.sorted = slices.Insert(t.sorted, i, s)
	}
	m.table.Store(t)
}

// RefLogOp names what moved a reference.
type RefLogOp string

// Reference log operations.
const (
	RefLogCreate     RefLogOp = "CREATE"
	RefLogAssign     RefLogOp = "ASSIGN"
	RefLogDelete     RefLogOp = "DELETE"
	RefLogCommit     RefLogOp = "COMMIT"
	RefLogMerge      RefLogOp = "MERGE"
	RefLogTransplant RefLogOp = "TRANSPLANT"
)

// RefLogEntry is one move of a reference, kept for audit.
type RefLogEntry struct {
	Seq       uint64
	Ref       string
	RefType   RefType
	Op        RefLogOp
	From      Hash // zero when created
	To        Hash // zero when deleted
	Principal string
	Time      time.Time
}

func encodeRefLog(e *RefLogEntry) []byte {
	enc := encoder{buf: make([]byte, 0, 128)}
	enc.byte(kindRefLog)
	enc.byte(formatV1)
	enc.string(e.Ref)
	enc.byte(byte(e.RefType))
	enc.string(string(e.Op))
	enc.hash(e.From)
	enc.hash(e.To)
	enc.string(e.Principal)
	enc.varint(e.Time.UnixMicro())
	return enc.buf
}

func decodeRefLog(seq uint64, b []byte) (*RefLogEntry, error) {
	d := decoder{buf: b}
	d.header(kindRefLog)
	e := &RefLogEntry{Seq: seq}
	e.Ref = d.string(maxRefNameBytes)
	e.RefType = RefType(d.byte())
	e.Op = RefLogOp(d.string(64))
	e.From = d.hash()
	e.To = d.hash()
	e.Principal = d.string(maxStringBytes)
	e.Time = time.UnixMicro(d.varint()).UTC()
	if err := d.finish(); err != nil {
		return nil, fmt.Errorf("decode ref log entry %d: %w", seq, err)
	}
	return e, nil
}
