package classify

import (
	"fmt"
	"strconv"
	"strings"
)

// The operation record: snapshot summary properties a writer may set to
// say what its snapshot did logically, so that a merge can replay it on a
// target whose files moved (merge/mergeengine/OPERATIONS.md is the reference for
// pipeline authors). classify reads them per snapshot; the merge engine
// decides on them.
const (
	// OpKind is what the snapshot did: one of the OpKind* values.
	OpKind = "floe.operation.kind"
	// OpPartitions lists the partitions an overwrite or delete replaced,
	// comma separated, each as Iceberg renders partition paths
	// ("day=2026-08-20", "day=2026-08-20/region=eu"; values escaped as in
	// data file paths). An unpartitioned table's only partition is the
	// empty path: the property is present and empty.
	OpPartitions = "floe.operation.partitions"
	// OpSourceSnapshotIDs pins the operation's inputs: the tables it read,
	// each at the snapshot it read, comma separated as TABLE@SNAPSHOT-ID
	// (TABLE as the catalog names it, "ns.events"), or "none" when it read
	// no table (files, a stream). The operation's own table is listed when
	// it read it ("INSERT OVERWRITE t ... FROM t").
	OpSourceSnapshotIDs = "floe.operation.source-snapshot-ids"
)

// Operation kinds (values of OpKind).
const (
	// OpKindAppend: the snapshot only added files.
	OpKindAppend = "append"
	// OpKindOverwritePartitions: the snapshot replaced every row of the
	// partitions in OpPartitions with the files it added (a dynamic
	// partition overwrite, INSERT OVERWRITE ... PARTITION).
	OpKindOverwritePartitions = "overwrite-partitions"
	// OpKindDeletePartitions: the snapshot removed every row of the
	// partitions in OpPartitions (DELETE ... WHERE a partition predicate).
	OpKindDeletePartitions = "delete-partitions"
)

// Operation is a snapshot's operation record as its summary states it.
type Operation struct {
	// Kind is OpKind's value.
	Kind string `json:"kind"`
	// Partitions are OpPartitions' paths (never null; empty for an append).
	Partitions []string `json:"partitions"`
	// Pinned says the record names its inputs (OpSourceSnapshotIDs).
	Pinned bool `json:"pinned"`
	// Sources are the pinned inputs (never null; empty for "none").
	Sources []SourceSnapshot `json:"sourceSnapshots"`
	// Invalid, when set, says why the record cannot be acted on.
	Invalid string `json:"invalid,omitempty"`
}

// SourceSnapshot is one pinned input of an operation.
type SourceSnapshot struct {
	Table      string `json:"table"`
	SnapshotID int64  `json:"snapshotId"`
}

// Replayable reports whether the record says enough to replay the
// operation on another head: a partition overwrite or delete that names
// its partitions and pins its inputs.
func (o *Operation) Replayable() bool {
	return o != nil && o.Invalid == "" && o.Pinned &&
		(o.Kind == OpKindOverwritePartitions || o.Kind == OpKindDeletePartitions)
}

// ParseOperation reads the operation record of a snapshot summary; nil
// when the summary has no floe.operation.* property.
func ParseOperation(summary map[string]string) *Operation {
	kind, hasKind := summary[OpKind]
	parts, hasParts := summary[OpPartitions]
	srcs, hasSrcs := summary[OpSourceSnapshotIDs]
	if !hasKind && !hasParts && !hasSrcs {
		return nil
	}
	o := &Operation{Kind: strings.TrimSpace(kind), Partitions: []string{}, Sources: []SourceSnapshot{}}
	var why []string
	switch o.Kind {
	case OpKindAppend:
		if hasParts {
			why = append(why, OpPartitions+" is set on an append")
		}
	case OpKindOverwritePartitions, OpKindDeletePartitions:
		if !hasParts {
			why = append(why, OpPartitions+" is missing")
		}
	case "":
		why = append(why, OpKind+" is missing")
	default:
		why = append(why, fmt.Sprintf("unknown %s %q (%s, %s or %s)", OpKind, o.Kind, OpKindAppend, OpKindOverwritePartitions, OpKindDeletePartitions))
	}
	if hasParts {
		for _, p := range strings.Split(parts, ",") {
			o.Partitions = append(o.Partitions, strings.TrimSpace(p))
		}
	}
	if hasSrcs {
		o.Pinned = true
		if v := strings.TrimSpace(srcs); v != "none" {
			for _, s := range strings.Split(v, ",") {
				s = strings.TrimSpace(s)
				at := strings.LastIndexByte(s, '@')
				id, err := strconv.ParseInt(s[at+1:], 10, 64)
				if at <= 0 || err != nil {
					why = append(why, fmt.Sprintf("%s: %q is not TABLE@SNAPSHOT-ID", OpSourceSnapshotIDs, s))
					continue
				}
				o.Sources = append(o.Sources, SourceSnapshot{Table: s[:at], SnapshotID: id})
			}
		}
	}
	o.Invalid = strings.Join(why, "; ")
	return o
}
