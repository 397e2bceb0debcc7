package changefeed

import (
	"context"
	"fmt"
	"maps"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
)

// Summaries reads the summary of an Iceberg table's snapshot: its
// operation and counters (added-records, deleted-data-files, ...).
type Summaries interface {
	SnapshotSummary(ctx context.Context, metadataLocation string, snapshotID int64) (map[string]string, error)
}

// WarehouseSummaries reads summaries from the metadata files of the
// warehouses that hold them, through their metadata caches.
func WarehouseSummaries(whs icebergtable.Warehouses) Summaries { return warehouseSummaries(whs) }

type warehouseSummaries icebergtable.Warehouses

func (ws warehouseSummaries) SnapshotSummary(ctx context.Context, loc string, snapshotID int64) (map[string]string, error) {
	w := icebergtable.Innermost(loc, ws)
	if w == nil {
		return nil, fmt.Errorf("metadata file %s is in no warehouse", loc)
	}
	f, err := w.ReadTableMetadata(ctx, loc)
	if err != nil {
		return nil, err
	}
	snap := f.Metadata.SnapshotByID(snapshotID)
	if snap == nil {
		return nil, fmt.Errorf("metadata file %s has no snapshot %d", loc, snapshotID)
	}
	if snap.Summary == nil {
		return nil, nil
	}
	out := maps.Clone(map[string]string(snap.Summary.Properties))
	if out == nil {
		out = map[string]string{}
	}
	out["operation"] = string(snap.Summary.Operation)
	return out, nil
}
