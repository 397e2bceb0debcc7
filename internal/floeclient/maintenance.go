package floeclient

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/floe-catalog/floe/internal/apidoc"
)

// The maintenance lock's and table statistics' documents, as the server
// defines them (internal/apidoc).
type (
	LockHolder     = apidoc.LockHolder
	Lock           = apidoc.Lock
	Lease          = apidoc.Lease
	TableStats     = apidoc.TableStats
	OperationStats = apidoc.OperationStats
	CurrentTotals  = apidoc.CurrentTotals
)

// LockTokenHeader carries a maintenance lease's token.
const LockTokenHeader = apidoc.LockTokenHeader

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
