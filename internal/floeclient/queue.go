package floeclient

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/floe-catalog/floe/internal/apidoc"
)

// MergeRequest is a merge queue request (package mergequeue).
type MergeRequest = apidoc.MergeRequest

// MergeQueueReport is the queue's report.
type MergeQueueReport = apidoc.MergeQueueReport

// SubmitMergeRequest is the body of POST /merge-requests.
type SubmitMergeRequest struct {
	Source         string   `json:"source"`
	Target         string   `json:"target"`
	Tables         []string `json:"tables,omitempty"`
	Priority       int      `json:"priority,omitempty"`
	RequiredChecks []string `json:"requiredChecks,omitempty"`
	IdempotencyKey string   `json:"idempotencyKey,omitempty"`
	Message        string   `json:"message,omitempty"`
}

// MergeRequestFilter selects requests for ListMergeRequests.
type MergeRequestFilter struct {
	State, Target, SourcePrefix, Since string
	Limit                              int
}

// SubmitMergeRequest enqueues a merge request.
func (c *Client) SubmitMergeRequest(ctx context.Context, req SubmitMergeRequest) (*MergeRequest, error) {
	var out MergeRequest
	if err := c.Do(ctx, http.MethodPost, "/merge-requests", nil, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MergeRequest reads one request.
func (c *Client) MergeRequest(ctx context.Context, id string) (*MergeRequest, error) {
	var out MergeRequest
	if err := c.Do(ctx, http.MethodGet, "/merge-requests/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListMergeRequests lists requests in arrival order.
func (c *Client) ListMergeRequests(ctx context.Context, f MergeRequestFilter) ([]MergeRequest, error) {
	q := url.Values{}
	for k, v := range map[string]string{"state": f.State, "target": f.Target, "sourcePrefix": f.SourcePrefix, "since": f.Since} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	var out struct {
		Requests []MergeRequest `json:"requests"`
	}
	if err := c.Do(ctx, http.MethodGet, "/merge-requests", q, nil, &out); err != nil {
		return nil, err
	}
	return out.Requests, nil
}

// ChangeMergeRequest cancels, approves or rejects a request (action
// "cancel", "approve" or "reject").
func (c *Client) ChangeMergeRequest(ctx context.Context, id, action, reason string) (*MergeRequest, error) {
	var body any
	if reason != "" {
		body = map[string]string{"reason": reason}
	}
	var out MergeRequest
	if err := c.Do(ctx, http.MethodPost, "/merge-requests/"+url.PathEscape(id)+"/"+action, nil, body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// MergeQueueReport reads the queue's report since a time or duration
// ("24h", RFC 3339; "" is the server's default, 24h).
func (c *Client) MergeQueueReport(ctx context.Context, since string) (*MergeQueueReport, error) {
	q := url.Values{}
	if since != "" {
		q.Set("since", since)
	}
	var out MergeQueueReport
	if err := c.Do(ctx, http.MethodGet, "/merge-requests/report", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
