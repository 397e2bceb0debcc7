package maintenance

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// DefaultStatsWindow is the window Stats counts snapshots over when the
// caller gives none.
const DefaultStatsWindow = 24 * time.Hour

// TableStats are one table's maintenance figures on one branch, computed
// from its current metadata file. Snapshot creation rate per operation is
// the best single proxy for commit contention (seed 003): a table taking
// many appends an hour is where compactions and expiries conflict.
type TableStats struct {
	Branch           string    `json:"branch"`
	Table            []string  `json:"table"`
	MetadataLocation string    `json:"metadata-location"`
	Since            time.Time `json:"since"`
	Until            time.Time `json:"until"`
	// Snapshots counts the snapshots the metadata still lists (expired
	// ones are gone) that were committed at or after Since, by summary
	// operation ("unknown" without one). Snapshot times are the writers'
	// clocks, so one a little ahead of the server's still counts.
	Snapshots map[string]OperationStats `json:"snapshots"`
	// SnapshotsInWindow is the sum of Snapshots' counts; SnapshotsTotal
	// counts every snapshot the metadata lists.
	SnapshotsInWindow int `json:"snapshots-in-window"`
	SnapshotsTotal    int `json:"snapshots-total"`
	// Current are the totals of the current snapshot's summary (absent
	// for a table without snapshots, or a summary without totals).
	Current *CurrentTotals `json:"current,omitempty"`
	// Lock is the table's live maintenance lease on the branch, if any.
	Lock *Lock `json:"lock,omitempty"`
}

// OperationStats are the snapshots of one operation in the window.
type OperationStats struct {
	Count int `json:"count"`
	// PerHour is Count over the window's length in hours.
	PerHour float64 `json:"per-hour"`
}

// CurrentTotals are the current snapshot's summary totals.
type CurrentTotals struct {
	SnapshotID      int64  `json:"snapshot-id"`
	Operation       string `json:"operation,omitempty"`
	Committed       string `json:"committed"`
	Records         *int64 `json:"total-records,omitempty"`
	DataFiles       *int64 `json:"total-data-files,omitempty"`
	DeleteFiles     *int64 `json:"total-delete-files,omitempty"`
	FilesSize       *int64 `json:"total-files-size,omitempty"`
	PositionDeletes *int64 `json:"total-position-deletes,omitempty"`
	EqualityDeletes *int64 `json:"total-equality-deletes,omitempty"`
}

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
