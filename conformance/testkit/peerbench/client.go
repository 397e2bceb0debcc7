package peerbench

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/floe-catalog/floe/conformance/testkit/benchhttp"
)

// Client speaks Nessie's REST API v2 to one server. It is safe for
// concurrent use; its connection pool keeps up to conns connections alive
// so that conns concurrent callers never wait for one or open new ones.
type Client struct {
	api benchhttp.API // Base: server URL with /api/v2
}

// NewClient returns a client of the server at serverURL (scheme, host and
// port; /api/v2 is appended) with a pool of conns connections.
func NewClient(serverURL string, conns int) (*Client, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid server URL %q: want http(s)://host:port", serverURL)
	}
	return &Client{api: benchhttp.API{
		Base:           strings.TrimRight(u.String(), "/") + "/api/v2",
		HTTP:           benchhttp.NewHTTPClient(conns),
		ErrorBodyLimit: 2000,
	}}, nil
}

// Close drops the pool's idle connections.
func (c *Client) Close() { c.api.HTTP.CloseIdleConnections() }

// Reference is a branch or tag at a commit.
type Reference struct {
	Type string `json:"type"`
	Name string `json:"name"`
	Hash string `json:"hash"`
}

// Content is a Nessie content value; only the fields the workloads use.
type Content struct {
	Type             string   `json:"type"`
	ID               string   `json:"id,omitempty"`
	MetadataLocation string   `json:"metadataLocation,omitempty"`
	SnapshotID       *int64   `json:"snapshotId,omitempty"`
	SchemaID         *int32   `json:"schemaId,omitempty"`
	SpecID           *int32   `json:"specId,omitempty"`
	SortOrderID      *int32   `json:"sortOrderId,omitempty"`
	Elements         []string `json:"elements,omitempty"`
}

// Key is a content key.
type Key struct {
	Elements []string `json:"elements"`
}

// Operation is one change of a commit.
type Operation struct {
	Type    string   `json:"type"`
	Key     Key      `json:"key"`
	Content *Content `json:"content,omitempty"`
}

// Table returns a new Iceberg table value (no content id: the server
// assigns it).
func Table(metadataLocation string, snapshotID int64) *Content {
	zero := int32(0)
	return &Content{Type: "ICEBERG_TABLE", MetadataLocation: metadataLocation,
		SnapshotID: &snapshotID, SchemaID: &zero, SpecID: &zero, SortOrderID: &zero}
}

// Namespace returns a namespace value.
func Namespace(elements ...string) *Content {
	return &Content{Type: "NAMESPACE", Elements: elements}
}

// Put is a PUT operation of value at the key of elements.
func Put(value *Content, elements ...string) Operation {
	return Operation{Type: "PUT", Key: Key{Elements: elements}, Content: value}
}

// StatusError is a non-2xx answer, with its body.
type StatusError = benchhttp.StatusError

// do sends body as JSON (unless nil) and decodes the answer into out
// (unless nil). A non-2xx answer is a *StatusError.
func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	return c.api.Do(ctx, method, path, body, out)
}

// Config checks that the server answers GET /config.
func (c *Client) Config(ctx context.Context) error {
	var cfg struct {
		DefaultBranch string `json:"defaultBranch"`
	}
	if err := c.do(ctx, http.MethodGet, "/config", nil, &cfg); err != nil {
		return err
	}
	if cfg.DefaultBranch == "" {
		return fmt.Errorf("GET %s/config: no default branch in the answer", c.api.Base)
	}
	return nil
}

// Reference reads a branch or tag by name.
func (c *Client) Reference(ctx context.Context, name string) (Reference, error) {
	var r struct {
		Reference Reference `json:"reference"`
	}
	err := c.do(ctx, http.MethodGet, "/trees/"+url.PathEscape(name), nil, &r)
	return r.Reference, err
}

// References lists every branch and tag, following pages; it also says
// how many requests that took.
func (c *Client) References(ctx context.Context) ([]Reference, int, error) {
	var all []Reference
	token := ""
	for pages := 1; ; pages++ {
		path := "/trees"
		if token != "" {
			path += "?page-token=" + url.QueryEscape(token)
		}
		var page struct {
			References []Reference `json:"references"`
			HasMore    bool        `json:"hasMore"`
			Token      string      `json:"token"`
		}
		if err := c.do(ctx, http.MethodGet, path, nil, &page); err != nil {
			return nil, pages, err
		}
		all = append(all, page.References...)
		if !page.HasMore || page.Token == "" {
			return all, pages, nil
		}
		token = page.Token
	}
}

// CreateBranch creates branch name at the commit of from.
func (c *Client) CreateBranch(ctx context.Context, name string, from Reference) (Reference, error) {
	var r struct {
		Reference Reference `json:"reference"`
	}
	q := url.Values{"name": {name}, "type": {"BRANCH"}}
	err := c.do(ctx, http.MethodPost, "/trees?"+q.Encode(), from, &r)
	return r.Reference, err
}

// Commit applies ops to branch, expecting it at expectedHash (the server
// rebases onto a newer head when no key conflicts), and returns the
// branch at the new commit.
func (c *Client) Commit(ctx context.Context, branch, expectedHash, message string, ops ...Operation) (Reference, error) {
	body := struct {
		CommitMeta struct {
			Message string `json:"message"`
		} `json:"commitMeta"`
		Operations []Operation `json:"operations"`
	}{Operations: ops}
	body.CommitMeta.Message = message
	var r struct {
		TargetBranch Reference `json:"targetBranch"`
	}
	path := "/trees/" + url.PathEscape(branch+"@"+expectedHash) + "/history/commit"
	if err := c.do(ctx, http.MethodPost, path, body, &r); err != nil {
		return Reference{}, err
	}
	if r.TargetBranch.Hash == "" {
		return Reference{}, fmt.Errorf("POST %s%s: no target branch hash in the answer", c.api.Base, path)
	}
	return r.TargetBranch, nil
}

// Content reads the value at key on ref. Key elements must not contain
// '.', '/', '\\' or '%', which would need Nessie's escaped key form.
func (c *Client) Content(ctx context.Context, ref string, key ...string) (Content, error) {
	var r struct {
		Content Content `json:"content"`
	}
	path := "/trees/" + url.PathEscape(ref) + "/contents/" + url.PathEscape(strings.Join(key, "."))
	err := c.do(ctx, http.MethodGet, path, nil, &r)
	return r.Content, err
}
