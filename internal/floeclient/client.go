package floeclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultTimeout bounds each request when Options gives none.
const DefaultTimeout = 30 * time.Second

// maxAnswer bounds what one answer may hold.
const maxAnswer = 256 << 20

// Options configure a Client.
type Options struct {
	// Token, when set, is sent as "Authorization: Bearer <token>".
	Token string
	// Timeout bounds each request, connection to last byte.
	Timeout time.Duration
	// UserAgent names the caller; "floe" when empty.
	UserAgent string
}

// Client calls one server's floe API.
type Client struct {
	base  string // server URL with /api/floe/v1, no trailing slash
	token string
	agent string
	http  *http.Client
}

// New returns a client of the server at serverURL (scheme, host and any
// path prefix; /api/floe/v1 is appended).
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
		base:  strings.TrimRight(u.String(), "/") + "/api/floe/v1",
		token: opts.Token,
		agent: opts.UserAgent,
		http:  &http.Client{Timeout: opts.Timeout},
	}, nil
}

// Error is an answer other than 2xx, in the API's error model.
type Error struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
	// Details are the code's details, as sent.
	Details json.RawMessage `json:"details,omitempty"`
	// Body is the whole answer, for --json output.
	Body []byte `json:"-"`
}

func (e *Error) Error() string {
	if e.Code == "" {
		return e.Message
	}
	return fmt.Sprintf("%s (%s)", e.Message, e.Code)
}

// Do sends a request to path (below /api/floe/v1) with a JSON body
// (unless body is nil) and decodes a JSON answer into out (unless out is
// nil). A non-2xx answer is an *Error.
func (c *Client) Do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	return c.do(ctx, method, path, query, nil, body, out)
}

// doWithHeader is Do with one more request header.
func (c *Client) doWithHeader(ctx context.Context, method, path, name, value string, body, out any) error {
	return c.do(ctx, method, path, nil, http.Header{name: {value}}, body, out)
}

func (c *Client) do(ctx context.Context, method, path string, query url.Values, header http.Header, body, out any) error {
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
	for name, values := range header {
		req.Header[http.CanonicalHeaderKey(name)] = values
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
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // its text repeats the URL
		}
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, u, err)
	}
	if resp.StatusCode/100 != 2 {
		var eb struct {
			Error *Error `json:"error"`
		}
		if json.Unmarshal(data, &eb) != nil || eb.Error == nil || eb.Error.Message == "" {
			msg := fmt.Sprintf("%s %s: HTTP %d %s", method, u, resp.StatusCode, strings.TrimSpace(string(data)))
			if len(msg) > 300 {
				msg = msg[:300] + "..."
			}
			eb.Error = &Error{Status: resp.StatusCode, Message: msg}
		}
		eb.Error.Body = data
		return eb.Error
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: malformed answer: %w", method, u, err)
	}
	return nil
}
