package main

import "testing"

func id(v int64) *int64 { return &v }

// chain returns snapshots ids[0] <- ids[1] <- ... with sequence numbers
// from seq0+1, the first on parent first.
func chain(first *int64, seq0 int64, ids ...int64) []Snapshot {
	var out []Snapshot
	parent := first
	for i, v := range ids {
		out = append(out, Snapshot{ID: v, ParentID: parent, SequenceNumber: seq0 + 1 + int64(i)})
		parent = id(v)
	}
	return out
}

func metadata(lastSeq int64, main int64, snaps []Snapshot) Metadata {
	return Metadata{LastSequenceNumber: lastSeq, CurrentSnapshotID: id(main), Snapshots: snaps}
}

func TestCheckAppends(t *testing.T) {
	tests := []struct {
		name        string
		initialMain *int64
		initialSeq  int64
		acked       []Append
		final       Metadata
		want        LossReport
	}{{
		name:  "every append on the chain",
		acked: []Append{{ID: 1}, {ID: 2, Parent: id(1)}, {ID: 3, Parent: id(2)}},
		final: metadata(3, 3, chain(nil, 0, 1, 2, 3)),
		want:  LossReport{Acked: 3, ChainComplete: true, ChainLen: 3, SeqAdvance: 3},
	}, {
		// Nessie 0.99.0 as issue 14 saw it: two appends both asserted that
		// main did not exist; both were acknowledged, the second replaced
		// the first.
		name:  "a second create-assert append replaced the first",
		acked: []Append{{ID: 1}, {ID: 2}, {ID: 3, Parent: id(2)}},
		final: metadata(2, 3, chain(nil, 0, 2, 3)),
		want:  LossReport{Acked: 3, ChainComplete: true, ChainLen: 2, MissingFromChain: 1, SeqAdvance: 2, SeqShortfall: 1, SameParent: 1},
	}, {
		name:  "a snapshot listed off main's chain",
		acked: []Append{{ID: 1}, {ID: 2, Parent: id(1)}, {ID: 9, Parent: id(1)}},
		final: metadata(3, 2, append(chain(nil, 0, 1, 2), Snapshot{ID: 9, ParentID: id(1), SequenceNumber: 3})),
		want:  LossReport{Acked: 3, ChainComplete: true, ChainLen: 2, MissingFromChain: 1, SeqAdvance: 3, SameParent: 1},
	}, {
		name:        "the run starts on an existing main",
		initialMain: id(7),
		initialSeq:  5,
		acked:       []Append{{ID: 1, Parent: id(7)}, {ID: 2, Parent: id(1)}},
		final:       metadata(7, 2, append(chain(nil, 4, 7), chain(id(7), 5, 1, 2)...)),
		want:        LossReport{Acked: 2, ChainComplete: true, ChainLen: 2, SeqAdvance: 2},
	}, {
		// floe rebases an append whose asserted parent is stale onto the
		// newer main: nothing is lost although two asserted one parent.
		name:  "the server rebased an append",
		acked: []Append{{ID: 1}, {ID: 2}},
		final: metadata(2, 2, chain(nil, 0, 1, 2)),
		want:  LossReport{Acked: 2, ChainComplete: true, ChainLen: 2, SeqAdvance: 2, Rebased: 1},
	}, {
		// Nessie lists only the current snapshot, without its parent.
		name:  "only the current snapshot listed, nothing lost",
		acked: []Append{{ID: 1}, {ID: 2, Parent: id(1)}, {ID: 3, Parent: id(2)}},
		final: metadata(3, 3, []Snapshot{{ID: 3, SequenceNumber: 3}}),
		want:  LossReport{Acked: 3, ChainLen: 1, SeqAdvance: 3},
	}, {
		name:  "only the current snapshot listed, one append replaced",
		acked: []Append{{ID: 1}, {ID: 2, Parent: id(1)}, {ID: 3, Parent: id(1)}},
		final: metadata(2, 3, []Snapshot{{ID: 3, SequenceNumber: 2}}),
		want:  LossReport{Acked: 3, ChainLen: 1, SeqAdvance: 2, SeqShortfall: 1, SameParent: 1},
	}, {
		name:  "main moved to a snapshot nobody acknowledged",
		acked: []Append{{ID: 1}, {ID: 2, Parent: id(1)}},
		final: metadata(1, 8, chain(nil, 0, 8)),
		want:  LossReport{Acked: 2, ChainComplete: true, ChainLen: 1, MissingFromChain: 2, SeqAdvance: 1, SeqShortfall: 1},
	}, {
		name:  "no appends, no snapshot",
		final: Metadata{CurrentSnapshotID: id(-1)},
		want:  LossReport{ChainComplete: true},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CheckAppends(tt.initialMain, tt.initialSeq, tt.acked, tt.final)
			if got != tt.want {
				t.Errorf("CheckAppends:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestLost(t *testing.T) {
	for _, tt := range []struct {
		r    LossReport
		want int
	}{
		{LossReport{}, 0},
		{LossReport{MissingFromChain: 1, SeqShortfall: 1, SameParent: 1}, 1},
		{LossReport{SeqShortfall: 3, SameParent: 1}, 3},
		{LossReport{MissingFromChain: 2}, 2},
	} {
		if got := tt.r.Lost(); got != tt.want {
			t.Errorf("%+v.Lost() = %d, want %d", tt.r, got, tt.want)
		}
	}
}
