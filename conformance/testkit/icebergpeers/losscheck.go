package main

import "fmt"

// Append is one append the server acknowledged: the snapshot it added,
// the parent it asserted main was at (nil: main did not exist) and the
// sequence number it proposed.
type Append struct {
	ID     int64
	Parent *int64
	Seq    int64
}

// LossReport says whether acknowledged appends to one table survived.
// Three independent checks, because servers keep different amounts of
// history (Nessie keeps only the current snapshot):
//   - the chain: every acknowledged snapshot must be on main's chain of
//     parents in the final metadata (only decidable when the server lists
//     the whole chain, down to the snapshot main started the run at);
//   - the sequence numbers: main's last-sequence-number must have grown
//     by at least the number of acknowledged appends, each of which
//     committed one new sequence number on top of its parent;
//   - the parents: no two acknowledged appends may sit on the same
//     parent, since the second would have had to replace the first. With
//     a complete chain the parent is the one the final metadata lists,
//     which differs from the one the client asserted when the server
//     rebased the append onto a newer main (floe does); otherwise it is
//     the asserted one.
type LossReport struct {
	Acked            int
	ChainComplete    bool  // the final metadata lists main's chain back to where the run started
	ChainLen         int   // snapshots on main's chain the server lists
	MissingFromChain int   // acknowledged snapshots off main's chain (known ones only when incomplete)
	SeqAdvance       int64 // final minus initial last-sequence-number
	SeqShortfall     int64 // acknowledged appends the sequence numbers do not account for
	SameParent       int   // acknowledged appends whose parent an earlier acknowledged one had
	Rebased          int   // acknowledged appends listed on another parent than the one asserted
}

// Lost is the number of acknowledged appends the checks prove lost: the
// largest of the three, since one lost append may show in all three.
func (r LossReport) Lost() int {
	return max(r.MissingFromChain, int(r.SeqShortfall), r.SameParent)
}

// String is a one-line summary for logs.
func (r LossReport) String() string {
	chain := "chain incomplete"
	if r.ChainComplete {
		chain = "chain complete"
	}
	return fmt.Sprintf("%d acknowledged, %d lost (%s: %d listed, %d missing; sequence +%d, %d short; %d on a reused parent; %d rebased by the server)",
		r.Acked, r.Lost(), chain, r.ChainLen, r.MissingFromChain, r.SeqAdvance, r.SeqShortfall, r.SameParent, r.Rebased)
}

// CheckAppends compares the acknowledged appends of a run with the final
// metadata of their table. initialMain and initialSeq are main's snapshot
// (nil: none) and the table's last-sequence-number before the run.
func CheckAppends(initialMain *int64, initialSeq int64, acked []Append, final Metadata) LossReport {
	r := LossReport{Acked: len(acked), SeqAdvance: final.LastSequenceNumber - initialSeq}
	r.SeqShortfall = max(int64(len(acked))-r.SeqAdvance, 0)

	byID := make(map[int64]Snapshot, len(final.Snapshots))
	for _, s := range final.Snapshots {
		byID[s.ID] = s
	}
	// Walk main's chain down to where main started the run. It is complete
	// when it gets there: to initialMain, or, on a table that had no
	// snapshot, to a first snapshot without a parent whose sequence number
	// follows the initial one. A server that lists only the current
	// snapshot, without its parent (Nessie), gives an incomplete chain.
	onChain := make(map[int64]bool)
	cur := final.Main()
	for cur != nil {
		if initialMain != nil && *cur == *initialMain {
			r.ChainComplete = true
			break
		}
		s, ok := byID[*cur]
		if !ok || onChain[s.ID] {
			break // not listed, or a cycle
		}
		onChain[s.ID] = true
		if s.ParentID == nil && initialMain == nil && s.SequenceNumber == initialSeq+1 {
			r.ChainComplete = true
		}
		cur = s.ParentID
	}
	if cur == nil && initialMain == nil && len(onChain) == 0 {
		r.ChainComplete = true // no snapshot at all, before or after
	}
	r.ChainLen = len(onChain)
	for _, a := range acked {
		if onChain[a.ID] {
			continue
		}
		// Off the chain: lost, if the chain is whole or the server still
		// lists the snapshot (so it is known and not on main).
		if _, listed := byID[a.ID]; r.ChainComplete || listed {
			r.MissingFromChain++
		}
	}

	seen := make(map[string]bool, len(acked))
	for _, a := range acked {
		parent := a.Parent
		if s, listed := byID[a.ID]; listed && r.ChainComplete {
			if !sameID(s.ParentID, a.Parent) {
				r.Rebased++
			}
			parent = s.ParentID
		}
		k := "none"
		if parent != nil {
			k = fmt.Sprint(*parent)
		}
		if seen[k] {
			r.SameParent++
		}
		seen[k] = true
	}
	return r
}

func sameID(a, b *int64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
