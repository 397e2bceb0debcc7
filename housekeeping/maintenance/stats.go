package maintenance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/internal/apidoc"
	"github.com/floe-catalog/floe/versionstore"
)

// DefaultStatsWindow is the window Stats counts snapshots over when the
// caller gives none.
const DefaultStatsWindow = 24 * time.Hour

// The statistics' documents live in internal/apidoc.
type (
	TableStats     = apidoc.TableStats
	OperationStats = apidoc.OperationStats
	CurrentTotals  = apidoc.CurrentTotals
)

// Stats computes table statistics: it reads table metadata through the
// warehouses and the lock's state from the locks.
type Stats struct {
	locks *Service
	whs   icebergtable.Warehouses
}

// NewStats returns statistics over the tables of whs and locks.
func NewStats(locks *Service, whs icebergtable.Warehouses) *Stats {
	return &Stats{locks: locks, whs: whs}
}

// Table computes the target's statistics over the window ending now (0:
// DefaultStatsWindow).
func (x *Stats) Table(ctx context.Context, t Target, window time.Duration) (*TableStats, error) {
	s := x.locks
	if err := t.validate(); err != nil {
		return nil, err
	}
	if window == 0 {
		window = DefaultStatsWindow
	}
	if window < time.Minute || window > 366*24*time.Hour {
		return nil, fmt.Errorf("%w: window %s: want 1m to 366 days", ErrInvalid, window)
	}
	ref, err := s.store.GetRef(t.Branch)
	if err != nil {
		return nil, err
	}
	c, err := s.store.GetContent(ctx, ref.Head, t.Table)
	if errors.Is(err, versionstore.ErrContentNotFound) || (err == nil && c.Type != versionstore.IcebergTable) {
		return nil, fmt.Errorf("%w: %s on %s", ErrNotATable, t.Table.String(), t.Branch)
	}
	if err != nil {
		return nil, err
	}
	wh := icebergtable.Innermost(c.MetadataLocation, x.whs)
	if wh == nil {
		return nil, fmt.Errorf("table %s on %s: metadata %s lies in no warehouse this server serves", t.Table.String(), t.Branch, c.MetadataLocation)
	}
	f, err := wh.ReadTableMetadata(ctx, c.MetadataLocation)
	if err != nil {
		return nil, fmt.Errorf("table %s on %s: %w", t.Table.String(), t.Branch, err)
	}
	until := s.clock()
	st := snapshotStats(f.Metadata, until.Add(-window), until)
	st.Branch, st.Table, st.MetadataLocation = t.Branch, t.Table, c.MetadataLocation
	if l, err := s.Status(ctx, t); err == nil {
		st.Lock = l
	} else if !errors.Is(err, ErrNotHeld) {
		return nil, err
	}
	return st, nil
}

// snapshotStats counts meta's snapshots committed since since by
// operation, over the window up to until, and reads the current
// snapshot's totals.
func snapshotStats(meta table.Metadata, since, until time.Time) *TableStats {
	st := &TableStats{Since: since, Until: until, Snapshots: map[string]OperationStats{}}
	hours := until.Sub(since).Hours()
	from := since.UnixMilli()
	for _, snap := range meta.Snapshots() {
		st.SnapshotsTotal++
		if snap.TimestampMs < from {
			continue
		}
		op := "unknown"
		if snap.Summary != nil && snap.Summary.Operation != "" {
			op = string(snap.Summary.Operation)
		}
		o := st.Snapshots[op]
		o.Count++
		st.Snapshots[op] = o
		st.SnapshotsInWindow++
	}
	for op, o := range st.Snapshots {
		o.PerHour = math.Round(float64(o.Count)/hours*1000) / 1000
		st.Snapshots[op] = o
	}
	cur := meta.CurrentSnapshot()
	if cur == nil {
		return st
	}
	ct := &CurrentTotals{SnapshotID: cur.SnapshotID,
		Committed: time.UnixMilli(cur.TimestampMs).UTC().Format(time.RFC3339)}
	if cur.Summary != nil {
		ct.Operation = string(cur.Summary.Operation)
		p := cur.Summary.Properties
		total := func(name string) *int64 {
			v, err := strconv.ParseInt(p[name], 10, 64)
			if err != nil {
				return nil
			}
			return &v
		}
		ct.Records, ct.DataFiles, ct.DeleteFiles = total("total-records"), total("total-data-files"), total("total-delete-files")
		ct.FilesSize = total("total-files-size")
		ct.PositionDeletes, ct.EqualityDeletes = total("total-position-deletes"), total("total-equality-deletes")
	}
	st.Current = ct
	return st
}
