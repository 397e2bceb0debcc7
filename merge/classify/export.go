package classify

import (
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// FilePartition is the partition of df as classification renders it (the
// spec df names, Iceberg's partition path), for callers that read
// manifests themselves and must compare with a Table's partitions.
func FilePartition(meta table.Metadata, df iceberg.DataFile) Partition {
	return Partition{SpecID: df.SpecID(), Path: partitionPath(meta, df)}
}

// HeadSnapshotID is the snapshot a classification takes as a table's
// head: its main ref's, else its current snapshot's; nil without one.
func HeadSnapshotID(meta table.Metadata) *int64 { return headSnapshot(meta) }
