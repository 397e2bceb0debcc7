package benchhttp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// NewHTTPClient returns an HTTP client whose pool keeps up to conns
// connections alive, so that conns concurrent callers never wait for one
// or open new ones.
func NewHTTPClient(conns int) *http.Client {
	conns = max(conns, 1)
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     90 * time.Second,
		// Without it Go asks for gzip, which one server may honour and
		// another not; all then send plain JSON.
		DisableCompression: true,
	}
	return &http.Client{Transport: tr, Timeout: 60 * time.Second}
}

// API is one server's JSON API: every path is under Base. It is safe for
// concurrent use once set up.
type API struct {
	Base string // URL every path is appended to, without a trailing slash
	HTTP *http.Client
	// ErrorBodyLimit is how many bytes of a non-2xx answer's body a
	// StatusError keeps; longer bodies are cut and end in "...".
	ErrorBodyLimit int
}

// StatusError is a non-2xx answer, with its body.
type StatusError struct {
	Method, URL string
	Status      int
	Body        string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s %s: HTTP %d: %s", e.Method, e.URL, e.Status, e.Body)
}

// IsConflict says whether err is a 409 answer (Iceberg REST: a
// CommitFailedException).
func IsConflict(err error) bool {
	var se *StatusError
	return errors.As(err, &se) && se.Status == http.StatusConflict
}

// Do sends body as JSON (unless nil) to Base+path and decodes the answer
// into out (unless nil: the answer is then read and dropped). A non-2xx
// answer is a *StatusError.
func (a *API) Do(ctx context.Context, method, path string, body, out any) error {
	u := a.Base + path
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: encoding the request: %w", method, u, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 && out == nil {
		// Read whole, as every system's answer is, but not kept: the
		// driver shares the machine with the server it measures, and
		// holding and decoding answers nobody looks at cost as much CPU
		// as some of the servers spend on the request.
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return fmt.Errorf("%s %s: reading the answer: %w", method, u, err)
		}
		return nil
	}
	data, err := readBody(resp)
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, u, err)
	}
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(data))
		if len(msg) > a.ErrorBodyLimit {
			msg = msg[:a.ErrorBodyLimit] + "..."
		}
		return &StatusError{Method: method, URL: u, Status: resp.StatusCode, Body: msg}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: malformed answer %.200q: %w", method, u, data, err)
	}
	return nil
}

// readBody reads an answer's body into a buffer of the size it announced,
// rather than growing one step by step as io.ReadAll does.
func readBody(resp *http.Response) ([]byte, error) {
	if n := resp.ContentLength; n >= 0 && n <= 64<<20 {
		var b bytes.Buffer
		b.Grow(int(n) + bytes.MinRead) // ReadFrom wants MinRead free before it sees EOF
		_, err := b.ReadFrom(resp.Body)
		return b.Bytes(), err
	}
	return io.ReadAll(resp.Body)
}
