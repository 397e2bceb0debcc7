package icebergrest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/iceberg/s3sign"
	"github.com/floe-catalog/floe/iceberg/s3vend"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/versionstore"
)

// warehouse is a served warehouse: its table files and what clients are
// told about them.
type warehouse struct {
	name string
	// files reads and writes the metadata files below the warehouse root.
	files *icebergtable.Warehouse
	// clientConfig is the config clients get with a table (never nil),
	// and clientConfigJSON its encoding, made once for every answer.
	clientConfig     map[string]string
	clientConfigJSON []byte
	// signing signs engines' S3 requests; nil when the warehouse does
	// not.
	signing *RemoteSigning
	signer  *s3sign.Signer
	// vending vends engines credentials; nil when the warehouse does
	// not.
	vending *VendedCredentials
	vendor  *s3vend.Vendor
	// buckets are the object-store buckets of the warehouse's root and
	// allowed locations: the only ones floe signs requests for.
	buckets []string
}

// newWarehouse serves the catalog's warehouse files as w configures.
// vendor is its STS client, needed when w vends credentials.
func newWarehouse(w Warehouse, files *icebergtable.Warehouse, vendor *s3vend.Vendor) (*warehouse, error) {
	var err error
	cc := map[string]string{}
	for k, v := range w.ClientConfig {
		cc[k] = v
	}
	ccJSON, err := json.Marshal(cc)
	if err != nil {
		return nil, fmt.Errorf("iceberg REST: warehouse %q: encoding its client config: %w", w.Name, err)
	}
	wh := &warehouse{name: w.Name, files: files, clientConfig: cc, clientConfigJSON: ccJSON, signing: w.RemoteSigning}
	for _, loc := range append([]string{files.Location()}, files.AllowedLocations()...) {
		if u, err := url.Parse(loc); err == nil && u.Scheme == "s3" && !slices.Contains(wh.buckets, u.Host) {
			wh.buckets = append(wh.buckets, u.Host)
		}
	}
	if w.VendedCredentials != nil {
		if len(wh.buckets) == 0 {
			return nil, fmt.Errorf("iceberg REST: warehouse %q at %s: vended credentials need an s3:// warehouse", w.Name, files.Location())
		}
		if vendor == nil {
			return nil, fmt.Errorf("iceberg REST: warehouse %q: vended credentials need a vendor (Deps.Vendors)", w.Name)
		}
		wh.vending, wh.vendor = w.VendedCredentials, vendor
	}
	if wh.signing != nil {
		if len(wh.buckets) == 0 {
			return nil, fmt.Errorf("iceberg REST: warehouse %q at %s: remote signing needs an s3:// warehouse", w.Name, files.Location())
		}
		if wh.signer, err = s3sign.NewSigner(wh.signing.Credentials); err != nil {
			return nil, fmt.Errorf("iceberg REST: warehouse %q: %w", w.Name, err)
		}
	}
	return wh, nil
}

// holdsBucket reports whether bucket is one of the warehouse's.
func (w *warehouse) holdsBucket(bucket string) bool { return slices.Contains(w.buckets, bucket) }

// warehouseRef is what one request's prefix or warehouse names: a
// warehouse at a point in the version history.
type warehouseRef struct {
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
func (a *api) resolveWarehouse(ctx context.Context, spec string) (*warehouseRef, error) {
	name, ref, _ := strings.Cut(spec, "@")
	if name == "" && ref == "" {
		name = a.defaultWH.name
		spec = name
	}
	return a.resolveParts(ctx, spec, name, ref)
}

// resolvePrefix resolves a /v1/{prefix}/ value: floe's own form (the
// warehouse expression) or Nessie's "{ref}|{warehouse}".
func (a *api) resolvePrefix(ctx context.Context, prefix string) (*warehouseRef, error) {
	if ref, name, ok := strings.Cut(prefix, "|"); ok {
		if name == "" {
			name = a.defaultWH.name
		}
		return a.resolveParts(ctx, prefix, name, ref)
	}
	name, ref, _ := strings.Cut(prefix, "@")
	return a.resolveParts(ctx, prefix, name, ref)
}

func (a *api) resolveParts(ctx context.Context, spec, name, refExpr string) (*warehouseRef, error) {
	wh, ok := a.warehouses[name]
	if !ok {
		return nil, newError(http.StatusNotFound, typeNoSuchWarehouse, "Warehouse does not exist: %s", name)
	}
	wr := &warehouseRef{wh: wh, spec: spec}
	if refExpr == "" {
		refExpr = versionstore.DefaultBranch
	}
	// A bare hash names a commit, never a reference (the store resolves it
	// so), so a tag named like a hash cannot stand in for that commit.
	res, err := a.store.Resolve(ctx, refExpr)
	if err != nil {
		switch {
		case errors.Is(err, versionstore.ErrReferenceNotFound):
			// Engines open a catalog on a branch before they write to it
			// (Flink's CREATE CATALOG asks for the config at once): say how
			// to make it, since floe does not create branches implicitly.
			// The command names the reference alone, without the commit or
			// relative part of an expression such as "etl@1a2b" or "etl~1".
			missing := refExpr
			if i := strings.IndexAny(missing, "@~^*"); i > 0 {
				missing = missing[:i]
			}
			return nil, newError(http.StatusNotFound, typeNoSuchWarehouse,
				"Warehouse %s names no branch, tag or commit: reference %q does not exist; create the branch first, e.g. `floe branch create %s --from %s` (or POST /api/v2/trees)",
				spec, missing, missing, versionstore.DefaultBranch)
		case errors.Is(err, versionstore.ErrCommitNotFound):
			return nil, newError(http.StatusNotFound, typeNoSuchWarehouse, "Warehouse %s names no branch, tag or commit: %v", spec, err)
		case errors.Is(err, versionstore.ErrInvalid):
			return nil, newError(http.StatusBadRequest, typeBadRequest, "Invalid reference in warehouse %s: %v", spec, err)
		}
		return nil, err
	}
	wr.hash = res.Hash
	wr.ref = authz.RefOf(res)
	if res.Pinned {
		wr.ref.Type = policy.RefDetached // a pinned branch commit is read-only
	}
	switch {
	case res.Ref != nil && res.Ref.Type == versionstore.Branch && !res.Pinned:
		wr.branch = res.Ref.Name
	case res.Ref != nil && res.Ref.Type == versionstore.Tag:
		wr.readOnly = fmt.Sprintf("Warehouse %s is read-only: it names a tag, not a branch", spec)
	default:
		wr.readOnly = fmt.Sprintf("Warehouse %s is read-only: it names a commit, not a branch", spec)
	}
	return wr, nil
}

// warehouseRefOf resolves the request's prefix.
func (a *api) warehouseRefOf(r *http.Request) (*warehouseRef, error) {
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
