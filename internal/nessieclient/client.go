package nessieclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// DefaultTimeout bounds each request when Options gives none.
const DefaultTimeout = 30 * time.Second

// Options configure a Client.
type Options struct {
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token string
	// Timeout bounds each request, connection to last byte.
	Timeout time.Duration
	// UserAgent names the caller; "floe" when empty.
	UserAgent string
}

// Client calls one server's Nessie API v2.
type Client struct {
	base  string // server URL with /api/v2, no trailing slash
	token string
	agent string
	http  *http.Client
}

// New returns a client of the server at serverURL (scheme, host and any
// path prefix; /api/v2 is appended).
func New(serverURL string, opts Options) (*Client, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid server URL %q: want http(s)://host[:port]", serverURL)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "floe"
	}
	return &Client{
		base:  strings.TrimRight(u.String(), "/") + "/api/v2",
		token: opts.Token,
		agent: opts.UserAgent,
		http:  &http.Client{Timeout: opts.Timeout},
	}, nil
}

// seg percent-encodes one path segment, '/' included: reference names and
// content keys travel as a single segment.
func seg(s string) string { return url.PathEscape(s) }

// do sends a request with a JSON body (unless body is nil) and decodes a
// JSON answer into out (unless out is nil). A non-2xx answer is an *Error.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	u := c.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.agent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, unwrapURLError(err))
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, u, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &Error{Status: resp.StatusCode, Reason: http.StatusText(resp.StatusCode), Body: data}
		if json.Unmarshal(data, e) != nil || (e.Message == "" && e.ErrorCode == "") {
			e.Message = fmt.Sprintf("%s %s: HTTP %d %s", method, u, resp.StatusCode, strings.TrimSpace(string(data)))
			if len(e.Message) > 300 {
				e.Message = e.Message[:300] + "..."
			}
		}
		return e
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: malformed answer: %w", method, u, err)
	}
	return nil
}

// unwrapURLError drops the *url.Error wrapper, whose text repeats the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		if ue.Timeout() {
			return fmt.Errorf("timed out: %w", ue.Err)
		}
		return ue.Err
	}
	return err
}

// Config reads the server's configuration.
func (c *Client) Config(ctx context.Context) (*Config, error) {
	var cfg Config
	return &cfg, c.do(ctx, http.MethodGet, "/config", nil, nil, &cfg)
}

// References lists every branch and tag, all pages.
func (c *Client) References(ctx context.Context) ([]Reference, error) {
	var all []Reference
	token := ""
	for {
		q := url.Values{}
		if token != "" {
			q.Set("page-token", token)
		}
		var page struct {
			References []Reference `json:"references"`
			HasMore    bool        `json:"hasMore"`
			Token      string      `json:"token"`
		}
		if err := c.do(ctx, http.MethodGet, "/trees", q, nil, &page); err != nil {
			return nil, err
		}
		all = append(all, page.References...)
		if !page.HasMore || page.Token == "" {
			return all, nil
		}
		token = page.Token
	}
}

// Reference reads a branch or tag by name.
func (c *Client) Reference(ctx context.Context, name string) (*Reference, error) {
	var r struct {
		Reference Reference `json:"reference"`
	}
	if err := c.do(ctx, http.MethodGet, "/trees/"+seg(name), nil, nil, &r); err != nil {
		return nil, err
	}
	return &r.Reference, nil
}

// Resolve evaluates a reference expression (name, name@hash, @hash, a
// relative form such as main~2) to the reference and commit it names.
func (c *Client) Resolve(ctx context.Context, expr string) (*Reference, error) {
	var r struct {
		EffectiveReference Reference `json:"effectiveReference"`
	}
	q := url.Values{"max-records": {"1"}}
	if err := c.do(ctx, http.MethodGet, "/trees/"+seg(expr)+"/entries", q, nil, &r); err != nil {
		return nil, err
	}
	return &r.EffectiveReference, nil
}

// CreateReference creates a branch or tag (typ) named name at the commit
// of from, which must carry a hash.
func (c *Client) CreateReference(ctx context.Context, name, typ string, from Reference) (*Reference, error) {
	var r struct {
		Reference Reference `json:"reference"`
	}
	q := url.Values{"name": {name}, "type": {typ}}
	if err := c.do(ctx, http.MethodPost, "/trees", q, from, &r); err != nil {
		return nil, err
	}
	return &r.Reference, nil
}

// AssignReference moves the branch or tag name from expectedHash to the
// commit of to.
func (c *Client) AssignReference(ctx context.Context, name, typ, expectedHash string, to Reference) (*Reference, error) {
	var r struct {
		Reference Reference `json:"reference"`
	}
	q := url.Values{"type": {typ}}
	if err := c.do(ctx, http.MethodPut, "/trees/"+seg(name+"@"+expectedHash), q, to, &r); err != nil {
		return nil, err
	}
	return &r.Reference, nil
}

// DeleteReference deletes the branch or tag name, which must be at
// expectedHash.
func (c *Client) DeleteReference(ctx context.Context, name, typ, expectedHash string) (*Reference, error) {
	var r struct {
		Reference Reference `json:"reference"`
	}
	q := url.Values{"type": {typ}}
	if err := c.do(ctx, http.MethodDelete, "/trees/"+seg(name+"@"+expectedHash), q, nil, &r); err != nil {
		return nil, err
	}
	return &r.Reference, nil
}

// Entries lists the keys at ref, all pages; a non-empty prefix keeps the
// keys under it.
func (c *Client) Entries(ctx context.Context, ref string, prefix *ContentKey) ([]Entry, *Reference, error) {
	var all []Entry
	token := ""
	for {
		q := url.Values{}
		if prefix != nil {
			q.Set("prefix-key", prefix.PathForm())
		}
		if token != "" {
			q.Set("page-token", token)
		}
		var page struct {
			Entries            []Entry   `json:"entries"`
			EffectiveReference Reference `json:"effectiveReference"`
			HasMore            bool      `json:"hasMore"`
			Token              string    `json:"token"`
		}
		if err := c.do(ctx, http.MethodGet, "/trees/"+seg(ref)+"/entries", q, nil, &page); err != nil {
			return nil, nil, err
		}
		all = append(all, page.Entries...)
		if !page.HasMore || page.Token == "" {
			return all, &page.EffectiveReference, nil
		}
		token = page.Token
	}
}

// Content reads the content of key at ref.
func (c *Client) Content(ctx context.Context, ref string, key ContentKey) (*ContentResponse, error) {
	var r ContentResponse
	path := "/trees/" + seg(ref) + "/contents/" + seg(key.PathForm())
	if err := c.do(ctx, http.MethodGet, path, nil, nil, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// LogPage is one page of a commit log.
type LogPage struct {
	LogEntries []LogEntry `json:"logEntries"`
	HasMore    bool       `json:"hasMore"`
	Token      string     `json:"token,omitempty"`
}

// Log reads one page of the first-parent commit log from ref, newest
// first; all asks for parents and operations (fetch=ALL).
func (c *Client) Log(ctx context.Context, ref string, maxRecords int, pageToken string, all bool) (*LogPage, error) {
	q := url.Values{}
	if maxRecords > 0 {
		q.Set("max-records", strconv.Itoa(maxRecords))
	}
	if pageToken != "" {
		q.Set("page-token", pageToken)
	}
	if all {
		q.Set("fetch", "ALL")
	}
	var p LogPage
	if err := c.do(ctx, http.MethodGet, "/trees/"+seg(ref)+"/history", q, nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Diff compares the trees of from and to, all pages.
func (c *Client) Diff(ctx context.Context, from, to string) (*Diff, error) {
	out := &Diff{Diffs: []DiffEntry{}}
	token := ""
	for {
		q := url.Values{}
		if token != "" {
			q.Set("page-token", token)
		}
		var page struct {
			Diff
			HasMore bool   `json:"hasMore"`
			Token   string `json:"token"`
		}
		if err := c.do(ctx, http.MethodGet, "/trees/"+seg(from)+"/diff/"+seg(to), q, nil, &page); err != nil {
			return nil, err
		}
		out.Diffs = append(out.Diffs, page.Diffs...)
		out.EffectiveFromReference, out.EffectiveToReference = page.EffectiveFromReference, page.EffectiveToReference
		if !page.HasMore || page.Token == "" {
			return out, nil
		}
		token = page.Token
	}
}

// Merge merges into branch, which must be at expectedHash.
func (c *Client) Merge(ctx context.Context, branch, expectedHash string, req MergeRequest) (*MergeResponse, error) {
	var r MergeResponse
	var q url.Values
	if req.Classify {
		q = url.Values{"floe-classification": {"true"}}
	}
	if err := c.do(ctx, http.MethodPost, "/trees/"+seg(branch+"@"+expectedHash)+"/history/merge", q, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Transplant copies commits onto branch, which must be at expectedHash.
func (c *Client) Transplant(ctx context.Context, branch, expectedHash string, req MergeRequest) (*MergeResponse, error) {
	var r MergeResponse
	var q url.Values
	if req.Classify {
		q = url.Values{"floe-classification": {"true"}}
	}
	if err := c.do(ctx, http.MethodPost, "/trees/"+seg(branch+"@"+expectedHash)+"/history/transplant", q, req, &r); err != nil {
		return nil, err
	}
	return &r, nil
}
