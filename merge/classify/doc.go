// Package classify decides what two branches did to one Iceberg table since
// their merge base.
//
// It owns the classification of what two branches did to one Iceberg table
// since their merge base: fast-forward, disjoint, partition overlap, file
// conflict or structural, with the evidence (the snapshots each side added,
// the partitions they touched, the data and delete files they added and
// removed). The report (Table) is the document a dry-run merge returns;
// README.md describes its JSON.
//
// It reads table metadata and manifests through icebergtable's warehouse
// file IO, and only what the snapshots added since the base wrote: their
// manifest lists and the manifests they added, never data files. It keeps
// nothing between calls (icebergtable's metadata cache serves repeated
// metadata reads).
//
// Whether a snapshot is a change the other side already has (the same
// snapshot, or a cherry-picked copy of it) is tablemerge's notion
// (tablemerge.Since, ChangeSet), shared with the merge engine and the
// merge checks; LineageSince hands it to packages that may not import
// tablemerge.
//
// The package may import icebergtable, tablemerge, versionstore's exported
// types and iceberg-go. It must not import net/http or any rest/ package (checked by
// TestImports): the APIs call it, never the other way round.
package classify
