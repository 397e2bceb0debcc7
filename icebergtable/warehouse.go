package icebergtable

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
)

// Warehouse is the root of table data (a local directory or an S3 prefix)
// with the file IO that reads and writes metadata files below it. Every
// location a client supplies is checked against it (Contains) before it is
// stored or read. A Warehouse is safe for concurrent use; open it once and
// share it.
type Warehouse struct {
	name string
	root *url.URL // scheme, host and a clean path without trailing slash
	// ioProps configure the file IO (Config.IOProperties).
	ioProps map[string]string
	// bucket is the object store client, made on first use (fileio.go).
	bucket objectStore
	// cache keeps parsed table metadata files; nil caches nothing.
	cache *MetadataCache
	// maxRead bounds the size of one metadata file read (Config.MaxMetadataFileBytes).
	maxRead int64
}

// DefaultMaxMetadataFileBytes bounds one metadata file read when the
// warehouse's owner configures no limit: far above what Iceberg writes
// (table metadata of a table with thousands of snapshots is a few MiB),
// low enough that a read can never exhaust the server's memory.
const DefaultMaxMetadataFileBytes = 64 << 20

// Config says where a warehouse is and how to reach it.
type Config struct {
	// Name names the warehouse in errors, e.g. "lake".
	Name string
	// Location is the root URL of table data, e.g. file:///srv/lake or
	// s3://bucket/prefix. A bare absolute path is taken as a file:// URL.
	Location string
	// IOProperties are iceberg-go FileIO properties (io.LoadFS) for the
	// metadata reads and writes under Location, e.g.
	// S3Options.IOProperties; nil for local files.
	IOProperties map[string]string
	// Cache keeps recently read and written table metadata files; several
	// warehouses may share one. nil means no cache: every read goes to
	// storage.
	Cache *MetadataCache
	// MaxMetadataFileBytes bounds the size of one metadata file read
	// (table or view metadata, after gunzipping): a larger file is refused
	// without being read further. 0 means DefaultMaxMetadataFileBytes.
	MaxMetadataFileBytes int64
}

// OpenWarehouse checks cfg and returns its warehouse. Nothing is read or
// written yet: an object store client is made on first use, so a store
// that is unreachable at start fails requests, not the server.
func OpenWarehouse(cfg Config) (*Warehouse, error) {
	u, err := normalizeLocation(cfg.Location)
	if err != nil {
		return nil, fmt.Errorf("warehouse %q: %w", cfg.Name, err)
	}
	if !localOrObjectStore(u.Scheme) {
		return nil, fmt.Errorf("warehouse %q: unsupported location scheme %q (file or s3)", cfg.Name, u.Scheme)
	}
	maxRead := cfg.MaxMetadataFileBytes
	if maxRead < 0 {
		return nil, fmt.Errorf("warehouse %q: negative metadata file size limit %d", cfg.Name, maxRead)
	}
	if maxRead == 0 {
		maxRead = DefaultMaxMetadataFileBytes
	}
	return &Warehouse{name: cfg.Name, root: u, ioProps: cfg.IOProperties, cache: cfg.Cache, maxRead: maxRead}, nil
}

// Name is the warehouse's name (Config.Name).
func (w *Warehouse) Name() string { return w.name }

// MaxMetadataFileBytes is the size limit of one metadata file read.
func (w *Warehouse) MaxMetadataFileBytes() int64 { return w.maxRead }

// Location is the root URL, normalized: no trailing slash.
func (w *Warehouse) Location() string { return w.root.String() }

// Contains reports whether loc lies strictly below the warehouse root and
// returns it normalized. A location with "." or ".." segments (also
// percent-encoded), a query, a fragment or user info is refused, not
// cleaned, since cleaning would hide where a client meant to write.
func (w *Warehouse) Contains(loc string) (string, error) {
	u, err := normalizeLocation(loc)
	if err != nil {
		return "", err
	}
	if !w.holds(u) {
		return "", fmt.Errorf("location %q is outside the warehouse %q at %s", loc, w.name, w.Location())
	}
	return u.String(), nil
}

// holds reports whether the normalized u lies strictly below the root.
func (w *Warehouse) holds(u *url.URL) bool {
	if u.Scheme != w.root.Scheme || u.Host != w.root.Host {
		return false
	}
	root := w.root.Path
	if root != "/" {
		root += "/"
	}
	return strings.HasPrefix(u.Path, root) && len(u.Path) > len(root)
}

// Innermost returns the warehouse of whs whose root holds loc, the
// innermost if roots nest, or nil.
func Innermost(loc string, whs []*Warehouse) *Warehouse {
	u, err := normalizeLocation(loc)
	if err != nil {
		return nil
	}
	var best *Warehouse
	for _, w := range whs {
		if w.holds(u) && (best == nil || len(w.root.Path) > len(best.root.Path)) {
			best = w
		}
	}
	return best
}

// DefaultTableLocation is <root>/<namespace path>/<name>-<uuid>, the
// location of a new table or view whose creator named none. Names are made
// safe for paths, so an odd name can never climb out of the warehouse; the
// uuid keeps locations unique across branches and renames.
func (w *Warehouse) DefaultTableLocation(namespace []string, name, uuid string) string {
	parts := []string{w.root.Path}
	for _, l := range namespace {
		parts = append(parts, pathSafe(l))
	}
	parts = append(parts, pathSafe(name)+"-"+uuid)
	u := *w.root
	u.Path = path.Join(parts...)
	return u.String()
}

var unsafePathChars = regexp.MustCompile(`[^A-Za-z0-9_.=-]`)

func pathSafe(s string) string {
	s = unsafePathChars.ReplaceAllString(s, "_")
	if strings.Trim(s, ".") == "" {
		s = strings.ReplaceAll(s, ".", "_")
	}
	return s
}

// normalizeLocation parses a location URL. A bare absolute path is taken as
// a file:// URL. The result has a clean path without trailing slash; a
// location with "." or ".." segments is refused, not cleaned.
func normalizeLocation(loc string) (*url.URL, error) {
	if loc == "" {
		return nil, errors.New("the location is empty")
	}
	u, err := url.Parse(loc)
	if err != nil {
		return nil, fmt.Errorf("malformed location %q: %v", loc, err)
	}
	if u.Scheme == "" {
		if !strings.HasPrefix(loc, "/") {
			return nil, fmt.Errorf("location %q is neither a URL nor an absolute path", loc)
		}
		u.Scheme = "file"
	}
	u.Scheme = strings.ToLower(u.Scheme)
	if u.Opaque != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return nil, fmt.Errorf("location %q must be a plain URL without query, fragment or user info", loc)
	}
	if u.Scheme == "file" && u.Host != "" && u.Host != "localhost" {
		return nil, fmt.Errorf("location %q names a remote host; file locations must be local", loc)
	}
	if u.Scheme == "file" {
		u.Host = ""
	}
	if isObjectStore(u.Scheme) && u.Host == "" {
		return nil, fmt.Errorf("location %q names no bucket", loc)
	}
	p := strings.TrimRight(u.Path, "/")
	for _, seg := range strings.Split(p, "/") {
		if seg == "." || seg == ".." {
			return nil, fmt.Errorf("location %q contains a %q segment", loc, seg)
		}
	}
	// The raw form too: "%2e%2e" decodes to ".." only later in some readers.
	for _, seg := range strings.Split(u.EscapedPath(), "/") {
		if d, err := url.PathUnescape(seg); err == nil && (d == "." || d == "..") {
			return nil, fmt.Errorf("location %q contains a %q segment", loc, d)
		}
	}
	if p == "" {
		p = "/"
	}
	u.Path, u.RawPath = p, ""
	return u, nil
}

// Warehouses are the warehouses a catalog serves. A location lies inside
// them if it lies inside any; it is the rule for every metadata location
// that enters the version store, by whichever API.
type Warehouses []*Warehouse

// Contains returns loc normalized if some warehouse contains it (see
// Warehouse.Contains), or an error naming loc and the warehouses.
func (ws Warehouses) Contains(loc string) (string, error) {
	if len(ws) == 1 {
		return ws[0].Contains(loc)
	}
	var firstErr error
	for _, w := range ws {
		s, err := w.Contains(loc)
		if err == nil {
			return s, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if firstErr == nil {
		return "", fmt.Errorf("location %q is outside the warehouses: none is configured", loc)
	}
	if _, err := normalizeLocation(loc); err != nil {
		return "", err
	}
	roots := make([]string, len(ws))
	for i, w := range ws {
		roots[i] = fmt.Sprintf("%q at %s", w.name, w.Location())
	}
	return "", fmt.Errorf("location %q is outside every warehouse (%s)", loc, strings.Join(roots, ", "))
}
