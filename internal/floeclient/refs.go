package floeclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// RetentionSettings are a reference's own retention settings; a nil
// field inherits the default of the branch's prefix. Durations are
// strings in Go's notation or whole days ("48h", "7d"); "0" means never
// expire / keep all.
type RetentionSettings struct {
	MaxAge      *string `json:"maxAge,omitempty"`
	KeepCommits *int    `json:"keepCommits,omitempty"`
	KeepHistory *string `json:"keepHistory,omitempty"`
}

// EffectiveRetention is the retention that applies to a reference.
type EffectiveRetention struct {
	MaxAge            string `json:"maxAge"`
	MaxAgeSource      string `json:"maxAgeSource"`
	KeepCommits       int    `json:"keepCommits"`
	KeepCommitsSource string `json:"keepCommitsSource"`
	KeepHistory       string `json:"keepHistory"`
	KeepHistorySource string `json:"keepHistorySource"`
	Protected         bool   `json:"protected"`
}

// RefStatus is a reference with its age and retention (GET /refs).
type RefStatus struct {
	Name         string             `json:"name"`
	Type         string             `json:"type"`
	Hash         string             `json:"hash"`
	Created      time.Time          `json:"created"`
	Age          string             `json:"age"`
	LastCommit   *time.Time         `json:"lastCommit,omitempty"`
	LastActivity time.Time          `json:"lastActivity"`
	Retention    EffectiveRetention `json:"retention"`
	Own          RetentionSettings  `json:"own"`
	ExpiresAt    *time.Time         `json:"expiresAt,omitempty"`
	Expired      bool               `json:"expired"`
}

// ExpireResult is what an expiry run deleted (or would) and skipped.
type ExpireResult struct {
	DryRun  bool `json:"dryRun"`
	Checked int  `json:"checked"`
	Expired []struct {
		Name         string    `json:"name"`
		Type         string    `json:"type"`
		Hash         string    `json:"hash"`
		LastActivity time.Time `json:"lastActivity"`
		MaxAge       string    `json:"maxAge"`
		MaxAgeSource string    `json:"maxAgeSource"`
		ExpiresAt    time.Time `json:"expiresAt"`
	} `json:"expired"`
	Skipped []struct {
		Name   string `json:"name"`
		Reason string `json:"reason"`
	} `json:"skipped"`
}

// Refs lists every reference with its age and retention.
func (c *Client) Refs(ctx context.Context) ([]RefStatus, error) {
	var out struct {
		References []RefStatus `json:"references"`
	}
	if err := c.Do(ctx, http.MethodGet, "/refs", nil, nil, &out); err != nil {
		return nil, err
	}
	return out.References, nil
}

func retentionPath(ref string) string { return "/refs/" + url.PathEscape(ref) + "/retention" }

// Retention returns one reference with its own and effective retention.
func (c *Client) Retention(ctx context.Context, ref string) (*RefStatus, error) {
	var out RefStatus
	if err := c.Do(ctx, http.MethodGet, retentionPath(ref), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// SetRetention replaces a reference's own settings.
func (c *Client) SetRetention(ctx context.Context, ref string, set RetentionSettings) (*RefStatus, error) {
	var out RefStatus
	if err := c.Do(ctx, http.MethodPut, retentionPath(ref), nil, set, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ClearRetention removes a reference's own settings.
func (c *Client) ClearRetention(ctx context.Context, ref string) (*RefStatus, error) {
	var out RefStatus
	if err := c.Do(ctx, http.MethodDelete, retentionPath(ref), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExpireRefs runs the expiry sweep now (or, with dryRun, says what it
// would delete).
func (c *Client) ExpireRefs(ctx context.Context, dryRun bool) (*ExpireResult, error) {
	var out ExpireResult
	q := url.Values{"dryRun": {strconv.FormatBool(dryRun)}}
	if err := c.Do(ctx, http.MethodPost, "/refs/expire", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
