package changefeed

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Cursor is a position in the feed: just after one event, or just after
// every event of one reference-log entry.
//
// The feed's order is the reference log's: entries by their seq, and the
// events derived from one entry in the order derive produces them. A seq is
// assigned by the backend in the same atomic, durable batch as the move it
// records, and the backend shows an entry only once it is durable and every
// entry with a smaller seq is visible (backend.LogScanner). On PostgreSQL
// the seqs of all replicas come from one counter row held until COMMIT, so
// the replicas share one sequence. Which events an entry has, and in what
// order, is a function of the entry and of immutable store objects only
// (commits, trees, contents), so it is the same whenever and wherever it
// is derived. (An Iceberg snapshot summary is read from the warehouse and
// may be missing from an event once the metadata file is gone; it never
// decides whether the event exists.)
//
// Hence the invariant a consumer relies on: reading from the cursor of the
// last event it handled, it receives every later event exactly once, in
// the feed's order (so in order per branch), whether floe restarted, was
// killed, or another replica answers; and it never receives an event for a
// move that did not become durable, since such a move has no visible
// entry. An entry that a crash left durable though its writer was never
// answered (its fsync finished, the acknowledgement did not) is in the
// history and appears in the feed like any other.
//
// The invariant holds within one store's history: a store rebuilt from an
// export (storeexport) numbers its log anew, and cursors of the old store
// do not apply to it.
type Cursor struct {
	// Seq is the reference-log entry's seq; 0 is before the first entry.
	Seq uint64
	// Index is the position of the last event consumed among the entry's
	// events, or EndOfEntry when all of them were.
	Index uint32
}

// EndOfEntry is the Index of a cursor past every event of its entry.
const EndOfEntry = math.MaxUint32

// Start is the cursor before every event. Every cursor with Seq 0 is, the
// zero Cursor included: log seqs start at 1.
var Start = Cursor{Seq: 0, Index: EndOfEntry}

// afterEntry is the cursor past every event of entry seq.
func afterEntry(seq uint64) Cursor { return Cursor{Seq: seq, Index: EndOfEntry} }

// String is the cursor's wire form: "<seq>" past a whole entry, or
// "<seq>.<index>" past one of its events (an event's id).
func (c Cursor) String() string {
	if c.Index == EndOfEntry || c.Seq == 0 {
		return strconv.FormatUint(c.Seq, 10)
	}
	return strconv.FormatUint(c.Seq, 10) + "." + strconv.FormatUint(uint64(c.Index), 10)
}

// ParseCursor reads a cursor's wire form; "" is Start.
func ParseCursor(s string) (Cursor, error) {
	if s == "" {
		return Start, nil
	}
	seqPart, idxPart, mid := strings.Cut(s, ".")
	seq, err := strconv.ParseUint(seqPart, 10, 64)
	if err != nil {
		return Cursor{}, fmt.Errorf("%w: cursor %q: want <seq> or <seq>.<index>", ErrInvalidCursor, s)
	}
	if !mid {
		return afterEntry(seq), nil
	}
	idx, err := strconv.ParseUint(idxPart, 10, 32)
	if err != nil || idx >= EndOfEntry || seq == 0 {
		return Cursor{}, fmt.Errorf("%w: cursor %q: want <seq> or <seq>.<index>", ErrInvalidCursor, s)
	}
	return Cursor{Seq: seq, Index: uint32(idx)}, nil
}

// Before reports whether c comes before d in the feed.
func (c Cursor) Before(d Cursor) bool {
	if c.Seq != d.Seq {
		return c.Seq < d.Seq
	}
	return c.Index < d.Index
}

// MarshalText writes the wire form, so a Cursor is a JSON string.
func (c Cursor) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText reads the wire form.
func (c *Cursor) UnmarshalText(b []byte) error {
	v, err := ParseCursor(string(b))
	if err != nil {
		return err
	}
	*c = v
	return nil
}
