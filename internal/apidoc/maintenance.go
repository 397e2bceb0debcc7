package apidoc

import "time"

// LockTokenHeader is the HTTP header a lease's token travels in: on floe's
// API to renew and release, and on Iceberg REST commits to prove that a
// maintenance commit is the holder's (engines set it as the catalog
// property header.Floe-Maintenance-Lock).
const LockTokenHeader = "Floe-Maintenance-Lock"

// LockHolder is who holds a lease: the authenticated principal that acquired
// it and the job name it gave.
type LockHolder struct {
	Principal string `json:"principal"`
	Job       string `json:"job"`
}

// Lock is a live lease as anybody may see it: never its token.
type Lock struct {
	ID       string     `json:"id"`
	Branch   string     `json:"branch"`
	Table    []string   `json:"table"`
	Holder   LockHolder `json:"holder"`
	Acquired time.Time  `json:"acquired"`
	Renewed  time.Time  `json:"renewed"`
	Expires  time.Time  `json:"expires"`
}

// Lease is what the acquirer gets: the lock and its token, the proof of
// holding it for renewals, releases and maintenance commits.
type Lease struct {
	Lock
	Token string `json:"token"`
}

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
