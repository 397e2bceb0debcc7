package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/floe-catalog/floe/conformance/testkit/benchhttp"
)

// Client speaks the Iceberg REST catalog API to one server with raw
// net/http and JSON, so every server gets the same bytes. It is safe for
// concurrent use; its pool keeps up to conns connections alive.
type Client struct {
	api benchhttp.API // Base: server URL up to and including the /v1/{prefix} root
}

// NewClient asks the server at baseURL (the URL an Iceberg client is given
// as `uri`, e.g. http://127.0.0.1:19120/iceberg) for its configuration of
// warehouse and returns a client of the prefix it answers.
func NewClient(ctx context.Context, baseURL, warehouse string, conns int) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid server URL %q: want http(s)://host:port[/path]", baseURL)
	}
	c := &Client{api: benchhttp.API{
		Base:           strings.TrimRight(u.String(), "/") + "/v1",
		HTTP:           benchhttp.NewHTTPClient(conns),
		ErrorBodyLimit: 1000,
	}}
	var cfg struct {
		Defaults  map[string]string `json:"defaults"`
		Overrides map[string]string `json:"overrides"`
	}
	q := ""
	if warehouse != "" {
		q = "?warehouse=" + url.QueryEscape(warehouse)
	}
	if err := c.do(ctx, http.MethodGet, "/config"+q, nil, &cfg); err != nil {
		return nil, err
	}
	// As Iceberg's Java client: overrides win over defaults; no prefix
	// means paths straight under /v1. The prefix is a path segment as the
	// server wrote it (Nessie's "main%7Cwarehouse" is already encoded), so
	// it is used as it is.
	prefix := cfg.Defaults["prefix"]
	if p, ok := cfg.Overrides["prefix"]; ok {
		prefix = p
	}
	if prefix != "" {
		c.api.Base += "/" + prefix
	}
	return c, nil
}

// Close drops the pool's idle connections.
func (c *Client) Close() { c.api.HTTP.CloseIdleConnections() }

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	return c.api.Do(ctx, method, path, body, out)
}

// Snapshot is the part of a table snapshot the workloads read and write.
type Snapshot struct {
	ID             int64             `json:"snapshot-id"`
	ParentID       *int64            `json:"parent-snapshot-id,omitempty"`
	SequenceNumber int64             `json:"sequence-number"`
	TimestampMs    int64             `json:"timestamp-ms"`
	ManifestList   string            `json:"manifest-list"`
	Summary        map[string]string `json:"summary"`
	SchemaID       int               `json:"schema-id"`
}

// Metadata is the part of a table's metadata the workloads need.
type Metadata struct {
	UUID               string     `json:"table-uuid"`
	Location           string     `json:"location"`
	LastSequenceNumber int64      `json:"last-sequence-number"`
	CurrentSnapshotID  *int64     `json:"current-snapshot-id"`
	Snapshots          []Snapshot `json:"snapshots"`
	Refs               map[string]struct {
		SnapshotID int64 `json:"snapshot-id"`
	} `json:"refs"`
}

// Main is the snapshot main points at, nil for a table without one.
func (m Metadata) Main() *int64 {
	if r, ok := m.Refs["main"]; ok {
		id := r.SnapshotID
		return &id
	}
	if m.CurrentSnapshotID != nil && *m.CurrentSnapshotID >= 0 {
		id := *m.CurrentSnapshotID
		return &id
	}
	return nil
}

type loadResult struct {
	MetadataLocation string   `json:"metadata-location"`
	Metadata         Metadata `json:"metadata"`
}

// CreateNamespace creates namespace ns.
func (c *Client) CreateNamespace(ctx context.Context, ns string) error {
	return c.do(ctx, http.MethodPost, "/namespaces", map[string]any{"namespace": []string{ns}}, nil)
}

// CreateTable creates table ns.name with one long column, format v2, at
// the server's default location.
func (c *Client) CreateTable(ctx context.Context, ns, name string) (Metadata, error) {
	body := map[string]any{
		"name": name,
		"schema": map[string]any{"type": "struct", "schema-id": 0, "fields": []any{
			map[string]any{"id": 1, "name": "id", "required": false, "type": "long"},
		}},
		"properties":   map[string]string{"format-version": "2"},
		"stage-create": false, // Nessie refuses a request without it; Java clients send it
	}
	var r loadResult
	err := c.do(ctx, http.MethodPost, "/namespaces/"+url.PathEscape(ns)+"/tables", body, &r)
	return r.Metadata, err
}

// LoadTable reads table ns.name (every snapshot the server keeps).
func (c *Client) LoadTable(ctx context.Context, ns, name string) (Metadata, error) {
	var r loadResult
	err := c.do(ctx, http.MethodGet, tablePath(ns, name), nil, &r)
	return r.Metadata, err
}

// LoadTableUUID reads table ns.name whole (a malformed or short answer is
// still an error) and decodes only its table-uuid, the one field the
// loadTable workloads check (see the package doc).
func (c *Client) LoadTableUUID(ctx context.Context, ns, name string) (string, error) {
	var r struct {
		Metadata struct {
			UUID string `json:"table-uuid"`
		} `json:"metadata"`
	}
	err := c.do(ctx, http.MethodGet, tablePath(ns, name), nil, &r)
	return r.Metadata.UUID, err
}

// Commit sends one table commit and returns the metadata it produced.
func (c *Client) Commit(ctx context.Context, ns, name string, requirements, updates []any) (Metadata, error) {
	var r loadResult
	err := c.do(ctx, http.MethodPost, tablePath(ns, name), commitBody(ns, name, requirements, updates), &r)
	return r.Metadata, err
}

// CommitOnly sends one table commit and reads the answer to the end
// without decoding it, for workloads that do not look at the metadata
// (see the package doc).
func (c *Client) CommitOnly(ctx context.Context, ns, name string, requirements, updates []any) error {
	return c.do(ctx, http.MethodPost, tablePath(ns, name), commitBody(ns, name, requirements, updates), nil)
}

func commitBody(ns, name string, requirements, updates []any) map[string]any {
	return map[string]any{
		"identifier":   map[string]any{"namespace": []string{ns}, "name": name},
		"requirements": requirements,
		"updates":      updates,
	}
}

func tablePath(ns, name string) string {
	return "/namespaces/" + url.PathEscape(ns) + "/tables/" + url.PathEscape(name)
}

// SetProperties is a commit that sets properties on the table of uuid.
func SetProperties(uuid string, props map[string]string) (requirements, updates []any) {
	return []any{map[string]any{"type": "assert-table-uuid", "uuid": uuid}},
		[]any{map[string]any{"action": "set-properties", "updates": props}}
}

// AppendSnapshots is a commit that adds snaps (each the parent of the
// next) and moves main to the last, asserting main is still at parent
// (nil: main does not exist yet).
func AppendSnapshots(parent *int64, snaps ...Snapshot) (requirements, updates []any) {
	assert := map[string]any{"type": "assert-ref-snapshot-id", "ref": "main", "snapshot-id": nil}
	if parent != nil {
		assert["snapshot-id"] = *parent
	}
	for _, s := range snaps {
		updates = append(updates, map[string]any{"action": "add-snapshot", "snapshot": s})
	}
	updates = append(updates, map[string]any{
		"action": "set-snapshot-ref", "ref-name": "main", "type": "branch", "snapshot-id": snaps[len(snaps)-1].ID,
	})
	return []any{assert}, updates
}
