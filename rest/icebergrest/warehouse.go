package icebergrest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/floe-catalog/floe/internal/authorize"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// warehouse is a configured warehouse with its root parsed once.
type warehouse struct {
	name string
	root *url.URL // scheme, host and a clean path without trailing slash
	// ioProps configure the catalog's own file IO (Warehouse.IOProperties).
	ioProps map[string]string
	// clientConfig is the config clients get with a table (never nil).
	clientConfig map[string]string
	// store is the object store client, made once (see fileIO).
	store objectStore
}

func newWarehouse(w Warehouse) (*warehouse, error) {
	if w.Name == "" || strings.ContainsAny(w.Name, "@|/") {
		return nil, fmt.Errorf("iceberg REST: invalid warehouse name %q: it must be non-empty without '@', '|' or '/'", w.Name)
	}
	u, err := normalizeLocation(w.Location)
	if err != nil {
		return nil, fmt.Errorf("iceberg REST: warehouse %q: %w", w.Name, err)
	}
	if !localOrObjectStore(u.Scheme) {
		return nil, fmt.Errorf("iceberg REST: warehouse %q: unsupported location scheme %q (file or s3)", w.Name, u.Scheme)
	}
	cc := map[string]string{}
	for k, v := range w.ClientConfig {
		cc[k] = v
	}
	return &warehouse{name: w.Name, root: u, ioProps: w.IOProperties, clientConfig: cc}, nil
}

// location returns the root as a string.
func (w *warehouse) location() string { return w.root.String() }

// normalizeLocation parses a location URL. A bare absolute path is taken as
// a file:// URL. The result has a clean path without trailing slash; a
// location with "." or ".." segments is refused, not cleaned, since
// cleaning would hide where a client meant to write.
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

// contains reports whether loc lies strictly below the warehouse root and
// returns it normalized.
func (w *warehouse) contains(loc string) (string, error) {
	u, err := normalizeLocation(loc)
	if err != nil {
		return "", err
	}
	if u.Scheme != w.root.Scheme || u.Host != w.root.Host {
		return "", fmt.Errorf("location %q is outside the warehouse %q at %s", loc, w.name, w.location())
	}
	root := w.root.Path
	if root != "/" {
		root += "/"
	}
	if !strings.HasPrefix(u.Path, root) || len(u.Path) == len(root) {
		return "", fmt.Errorf("location %q is outside the warehouse %q at %s", loc, w.name, w.location())
	}
	return u.String(), nil
}

// requireInside validates a location a client supplied.
func (w *warehouse) requireInside(what, loc string) (string, error) {
	s, err := w.contains(loc)
	if err != nil {
		return "", badRequest("invalid %s: %v", what, err)
	}
	return s, nil
}

// defaultTableLocation is <root>/<namespace path>/<name>-<uuid>. Names are
// made safe for paths, so an odd name can never climb out of the
// warehouse; the uuid keeps locations unique across branches and renames.
func (w *warehouse) defaultTableLocation(id identifier, uuid string) string {
	parts := []string{w.root.Path}
	for _, l := range id.Namespace {
		parts = append(parts, pathSafe(l))
	}
	parts = append(parts, pathSafe(id.Name)+"-"+uuid)
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

// catalog is what one request's prefix or warehouse names: a warehouse and
// a point in the version history.
type catalog struct {
	wh *warehouse
	// spec is the warehouse expression, e.g. "lake@etl/daily".
	spec string
	// branch is the branch writes go to; "" when read-only.
	branch string
	// hash is the commit reads see: the branch head at resolution time, or
	// the pinned commit.
	hash versionstore.Hash
	// readOnly explains why writes are refused; "" for a branch.
	readOnly string
	// ref is the reference as the policy sees it.
	ref policy.Ref
}

// resolveWarehouse resolves a ?warehouse= value: "" (the default
// warehouse, main), "lake", "lake@<ref>" or "lake@<hash>".
func (a *api) resolveWarehouse(ctx context.Context, spec string) (*catalog, error) {
	name, ref, _ := strings.Cut(spec, "@")
	if name == "" && ref == "" {
		name = a.defaultWH.name
		spec = name
	}
	return a.resolveParts(ctx, spec, name, ref)
}

// resolvePrefix resolves a /v1/{prefix}/ value: floe's own form (the
// warehouse expression) or Nessie's "{ref}|{warehouse}".
func (a *api) resolvePrefix(ctx context.Context, prefix string) (*catalog, error) {
	if ref, name, ok := strings.Cut(prefix, "|"); ok {
		if name == "" {
			name = a.defaultWH.name
		}
		return a.resolveParts(ctx, prefix, name, ref)
	}
	name, ref, _ := strings.Cut(prefix, "@")
	return a.resolveParts(ctx, prefix, name, ref)
}

var hashLike = regexp.MustCompile(`^[0-9a-fA-F]{8,64}$`)

func (a *api) resolveParts(ctx context.Context, spec, name, refExpr string) (*catalog, error) {
	wh, ok := a.warehouses[name]
	if !ok {
		return nil, newError(http.StatusNotFound, typeNoSuchWarehouse, "Warehouse does not exist: %s", name)
	}
	c := &catalog{wh: wh, spec: spec}
	if refExpr == "" {
		refExpr = versionstore.DefaultBranch
	}
	// A bare hash names a commit unless a reference has that name.
	expr := refExpr
	if hashLike.MatchString(refExpr) {
		if _, err := a.store.GetRef(refExpr); errors.Is(err, versionstore.ErrReferenceNotFound) {
			expr = "@" + refExpr
		}
	}
	res, err := a.store.Resolve(ctx, expr)
	if err != nil {
		switch {
		case errors.Is(err, versionstore.ErrReferenceNotFound):
			return nil, newError(http.StatusNotFound, typeNoSuchWarehouse, "Warehouse %s names no branch, tag or commit: reference %q does not exist", spec, refExpr)
		case errors.Is(err, versionstore.ErrCommitNotFound):
			return nil, newError(http.StatusNotFound, typeNoSuchWarehouse, "Warehouse %s names no branch, tag or commit: %v", spec, err)
		case errors.Is(err, versionstore.ErrInvalid):
			return nil, newError(http.StatusBadRequest, typeBadRequest, "Invalid reference in warehouse %s: %v", spec, err)
		}
		return nil, err
	}
	c.hash = res.Hash
	c.ref = authorize.RefOf(res)
	if res.Pinned {
		c.ref.Type = policy.RefDetached // a pinned branch commit is read-only
	}
	switch {
	case res.Ref != nil && res.Ref.Type == versionstore.Branch && !res.Pinned:
		c.branch = res.Ref.Name
	case res.Ref != nil && res.Ref.Type == versionstore.Tag:
		c.readOnly = fmt.Sprintf("Warehouse %s is read-only: it names a tag, not a branch", spec)
	default:
		c.readOnly = fmt.Sprintf("Warehouse %s is read-only: it names a commit, not a branch", spec)
	}
	return c, nil
}

// catalogFor resolves the request's prefix.
func (a *api) catalogFor(r *http.Request) (*catalog, error) {
	p, err := prefixVar(r)
	if err != nil {
		return nil, err
	}
	c, err := a.resolvePrefix(r.Context(), p)
	if err != nil {
		return nil, err
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		// Reads are authorized here, writes by their handlers, which
		// know what they touch.
		if err := a.authorizeRead(r, c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// head returns the current head of a branch, for each attempt of a write.
func (a *api) head(branch string) (versionstore.Hash, error) {
	ref, err := a.store.GetRef(branch)
	if err != nil {
		if errors.Is(err, versionstore.ErrReferenceNotFound) {
			return versionstore.Hash{}, newError(http.StatusNotFound, typeNoSuchWarehouse, "Branch %s no longer exists", branch)
		}
		return versionstore.Hash{}, err
	}
	return ref.Head, nil
}

// tableReply is the LoadTableResult of a table in this warehouse:
// metadataReply with the warehouse's client config (FileIO properties
// engines need to write data files, e.g. an S3 endpoint).
func (w *warehouse) tableReply(location string, metadata []byte) *reply {
	rp := metadataReply(location, metadata, true)
	if len(w.clientConfig) == 0 {
		return rp
	}
	// metadataReply ends the body with an empty config; only that is
	// replaced, so the metadata bytes stay as they are.
	const empty = `{}}` + "\n"
	cfg, err := json.Marshal(w.clientConfig)
	if err != nil || !bytes.HasSuffix(rp.body, []byte(empty)) {
		return rp
	}
	body := make([]byte, 0, len(rp.body)+len(cfg))
	body = append(body, rp.body[:len(rp.body)-len(empty)]...)
	body = append(body, cfg...)
	rp.body = append(body, "}\n"...)
	return rp
}
