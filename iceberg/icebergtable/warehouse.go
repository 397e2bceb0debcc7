package icebergtable

import (
	"errors"
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
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
	// recheck is Config.ObjectStoreRecheck, defaulted.
	recheck time.Duration
	// maxRead bounds the size of one metadata file read (Config.MaxMetadataFileBytes).
	maxRead int64
	// allowed are the extra location prefixes (Config.AllowedLocations),
	// normalized like root.
	allowed []*url.URL
	// tracer traces metadata file reads and writes (tracing.go).
	tracer trace.Tracer
	// dirs says where a new local file's directory needs its own fsync.
	dirs *dirSync
	// encodeBuffers are scratch space for encoding metadata files.
	encodeBuffers encodeBuffers
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
	// AllowedLocations are extra location prefixes an operator lets
	// clients place tables and views under besides Location, as Polaris's
	// allowed locations, e.g. file:///data/shared or s3://other/prefix.
	// They are normalized and checked like Location; a prefix matches on
	// path-element boundaries only, and a local file system root is
	// refused. Files under them are read and written with the file IO of
	// their scheme (IOProperties when it is the warehouse's object store
	// scheme).
	AllowedLocations []string
	// ObjectStoreRecheck is how long a load trusts that a cached metadata
	// file on an object store still exists after a check found it (see
	// LoadTableMetadata); 0 means DefaultObjectStoreRecheck, negative
	// checks on every load.
	ObjectStoreRecheck time.Duration
	// TracerProvider traces every metadata file read and write as a
	// span of the caller's trace; nil records nothing.
	TracerProvider trace.TracerProvider
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
	w := &Warehouse{name: cfg.Name, root: u, ioProps: cfg.IOProperties, cache: cfg.Cache, maxRead: maxRead, recheck: cfg.ObjectStoreRecheck,
		tracer: tracerOf(cfg.TracerProvider), dirs: newDirSync()}
	if w.recheck == 0 {
		w.recheck = DefaultObjectStoreRecheck
	}
	for _, loc := range cfg.AllowedLocations {
		a, err := normalizeAllowedLocation(loc)
		if err != nil {
			return nil, fmt.Errorf("warehouse %q: %w", cfg.Name, err)
		}
		w.allowed = append(w.allowed, a)
	}
	return w, nil
}

// normalizeAllowedLocation checks one Config.AllowedLocations prefix.
func normalizeAllowedLocation(loc string) (*url.URL, error) {
	u, err := normalizeLocation(loc)
	if err != nil {
		return nil, fmt.Errorf("allowed location: %w", err)
	}
	if !localOrObjectStore(u.Scheme) {
		return nil, fmt.Errorf("allowed location %q: unsupported scheme %q (file or s3)", loc, u.Scheme)
	}
	// The whole local file system would make the location rule moot.
	if u.Scheme == "file" && u.Path == "/" {
		return nil, fmt.Errorf("allowed location %q is the file system root; name a directory below it", loc)
	}
	return u, nil
}

// AllowedLocations are the extra location prefixes, normalized.
func (w *Warehouse) AllowedLocations() []string {
	out := make([]string, len(w.allowed))
	for i, a := range w.allowed {
		out[i] = a.String()
	}
	return out
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
	if !w.permits(u) {
		if len(w.allowed) > 0 {
			return "", fmt.Errorf("location %q is outside the warehouse %q at %s and its allowed locations %s",
				loc, w.name, w.Location(), strings.Join(w.AllowedLocations(), ", "))
		}
		return "", fmt.Errorf("location %q is outside the warehouse %q at %s", loc, w.name, w.Location())
	}
	return u.String(), nil
}

// holds reports whether the normalized u lies strictly below the root.
func (w *Warehouse) holds(u *url.URL) bool { return below(u, w.root) }

// permits reports whether the normalized u lies strictly below the root
// or one of the allowed locations: the location rule.
func (w *Warehouse) permits(u *url.URL) bool {
	if w.holds(u) {
		return true
	}
	for _, a := range w.allowed {
		if below(u, a) {
			return true
		}
	}
	return false
}

// below reports whether the normalized u lies strictly below the
// normalized prefix, on a path-element boundary: /tmp/allowed-evil is not
// below /tmp/allowed.
func below(u, prefix *url.URL) bool {
	if u.Scheme != prefix.Scheme || u.Host != prefix.Host {
		return false
	}
	root := prefix.Path
	if root != "/" {
		root += "/"
	}
	return strings.HasPrefix(u.Path, root) && len(u.Path) > len(root)
}

// Innermost returns the warehouse of whs whose root holds loc, the
// innermost if roots nest; else the first whose allowed locations hold
// it; or nil.
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
	if best != nil {
		return best
	}
	// A location under an allowed prefix only: the first warehouse that
	// permits it reads it.
	for _, w := range whs {
		if w.permits(u) {
			return w
		}
	}
	return nil
}

// DefaultTableLocation is <root>/<namespace path>/<name>-<uuid>, the
// location of a new table or view whose creator named none. Names are made
// safe for paths, so an odd name can never climb out of the warehouse; the
// uuid keeps locations unique across branches and renames.
func (w *Warehouse) DefaultTableLocation(namespace []string, name, uuid string) string {
	return w.below(namespace, pathSafe(name)+"-"+uuid)
}

// DefaultNamespaceLocation is <root>/<namespace path>, the folder
// DefaultTableLocation puts the namespace's tables and views in. It is
// what a namespace that sets no location of its own reports as its
// location: clients that derive a table's location from its namespace's
// (Trino) find one that floe accepts and that stays inside the warehouse.
func (w *Warehouse) DefaultNamespaceLocation(namespace []string) string {
	return w.below(namespace, "")
}

// below is the location of the namespace's folder, or of leaf inside it
// when leaf is not empty; the namespace's levels are made path-safe.
func (w *Warehouse) below(namespace []string, leaf string) string {
	parts := make([]string, 0, len(namespace)+2)
	parts = append(parts, w.root.Path)
	for _, l := range namespace {
		parts = append(parts, pathSafe(l))
	}
	parts = append(parts, leaf)
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
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return nil, fmt.Errorf("location %q contains a %q segment", loc, seg)
		}
	}
	// The raw form too: "%2e%2e" decodes to ".." only later in some readers.
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
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
