package classify

import (
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// PartitionOf is the partition of df as classifications name it (its spec
// id and Iceberg's partition path), for callers that match files against
// a report's partitions (the merge engine's duplicate-key check).
func PartitionOf(meta table.Metadata, df iceberg.DataFile) Partition {
	return Partition{SpecID: df.SpecID(), Path: partitionPath(meta, df)}
}
