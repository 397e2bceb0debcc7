package floeclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// LockTokenHeader carries a maintenance lease's token (as
// maintenance.TokenHeader).
const LockTokenHeader = "Floe-Maintenance-Lock"

// LockHolder is who holds a maintenance lock.
type LockHolder struct {
	Principal string `json:"principal"`
	Job       string `json:"job"`
}

// Lock is a live maintenance lease.
type Lock struct {
	ID       string     `json:"id"`
	Branch   string     `json:"branch"`
	Table    []string   `json:"table"`
	Holder   LockHolder `json:"holder"`
	Acquired time.Time  `json:"acquired"`
	Renewed  time.Time  `json:"renewed"`
	Expires  time.Time  `json:"expires"`
}

// Lease is an acquired lock with its token.
type Lease struct {
	Lock
	Token string `json:"token"`
}

// HeldLock returns the lock an error says is held by someone else (a 409
// CONFLICT whose details are the lock), or nil.
func HeldLock(err error) *Lock {
	e, ok := errors.AsType[*Error](err)
	if !ok || e.Status != http.StatusConflict || len(e.Details) == 0 {
		return nil
	}
	var l Lock
	if json.Unmarshal(e.Details, &l) != nil || l.ID == "" {
		return nil
	}
	return &l
}

// AcquireLock takes the maintenance lock of table on branch for ttl (0:
// the server's default) in the name of job.
func (c *Client) AcquireLock(ctx context.Context, branch string, table []string, job string, ttl time.Duration) (*Lease, error) {
	body := map[string]any{"branch": branch, "table": table, "job": job}
	if ttl > 0 {
		body["ttl"] = ttl.String()
	}
	var out Lease
	return &out, c.Do(ctx, http.MethodPost, "/maintenance/locks", nil, body, &out)
}

// FindLock returns the live lease on table on branch, or nil.
func (c *Client) FindLock(ctx context.Context, branch string, table []string) (*Lock, error) {
	locks, err := c.ListLocks(ctx, branch, table)
	if err != nil || len(locks) == 0 {
		return nil, err
	}
	return &locks[0], nil
}

// ListLocks lists the live leases of branch ("" for all) and table (nil
// for all).
func (c *Client) ListLocks(ctx context.Context, branch string, table []string) ([]Lock, error) {
	q := url.Values{}
	if branch != "" {
		q.Set("branch", branch)
	}
	if table != nil {
		q.Set("table", strings.Join(table, "\x1f"))
	}
	var out struct {
		Locks []Lock `json:"locks"`
	}
	return out.Locks, c.Do(ctx, http.MethodGet, "/maintenance/locks", q, nil, &out)
}

// RenewLock extends the lease token holds to ttl from now (0: the
// server's default).
func (c *Client) RenewLock(ctx context.Context, id, token string, ttl time.Duration) (*Lock, error) {
	body := map[string]any{}
	if ttl > 0 {
		body["ttl"] = ttl.String()
	}
	var out Lock
	return &out, c.doWithHeader(ctx, http.MethodPut, "/maintenance/locks/"+url.PathEscape(id), LockTokenHeader, token, body, &out)
}

// ReleaseLock ends the lease token holds.
func (c *Client) ReleaseLock(ctx context.Context, id, token string) error {
	return c.doWithHeader(ctx, http.MethodDelete, "/maintenance/locks/"+url.PathEscape(id), LockTokenHeader, token, nil, nil)
}

// TableStats are a table's maintenance statistics.
type TableStats struct {
	Branch            string                    `json:"branch"`
	Table             []string                  `json:"table"`
	MetadataLocation  string                    `json:"metadata-location"`
	Since             time.Time                 `json:"since"`
	Until             time.Time                 `json:"until"`
	Snapshots         map[string]OperationStats `json:"snapshots"`
	SnapshotsInWindow int                       `json:"snapshots-in-window"`
	SnapshotsTotal    int                       `json:"snapshots-total"`
	Current           *CurrentTotals            `json:"current,omitempty"`
	Lock              *Lock                     `json:"lock,omitempty"`
}

// OperationStats are the snapshots of one operation in a window.
type OperationStats struct {
	Count   int     `json:"count"`
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

// TableStats computes table's statistics on branch over the window
// ending now (0: the server's default, 24h).
func (c *Client) TableStats(ctx context.Context, branch string, table []string, since time.Duration) (*TableStats, error) {
	q := url.Values{"table": {strings.Join(table, "\x1f")}}
	if branch != "" {
		q.Set("branch", branch)
	}
	if since > 0 {
		q.Set("since", since.String())
	}
	var out TableStats
	return &out, c.Do(ctx, http.MethodGet, "/tables/stats", q, nil, &out)
}
