package icebergrest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/floe-catalog/floe/iceberg/s3vend"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
)

// VendedCredentials makes a warehouse on S3 vend its engines short-lived
// credentials per table (STS AssumeRole with a session policy limited to
// the table's prefixes, iceberg/s3vend): read-only, or read-write for
// principals the policy lets write the table at the branch, and never
// able to delete. It is plain data: the STS client built from it is
// Deps.Vendors' (server/assemble builds it).
type VendedCredentials struct {
	// STS says which role is assumed, through which STS, for how long.
	STS s3vend.Config
	// Always hands credentials with every loadTable, createTable and
	// registerTable answer; otherwise only to clients that ask with
	// X-Iceberg-Access-Delegation: vended-credentials. A client that
	// asks for remote-signing on a warehouse that signs gets signing.
	Always bool
}

// Reasons of vend refusals (floe_storage_vend_refusals_total).
const (
	vendRefusedPolicy   = "policy"
	vendRefusedLocation = "location"
	vendRefusedSTS      = "sts"
)

// Config keys of vended credentials, as Iceberg's clients read them.
const (
	cfgS3AccessKeyID        = "s3.access-key-id"
	cfgS3SecretAccessKey    = "s3.secret-access-key"
	cfgS3SessionToken       = "s3.session-token"
	cfgS3SessionExpiresAtMS = "s3.session-token-expires-at-ms" // Java S3FileIO's VendedCredentialsProvider
	// Java (1.9+) refreshes vended credentials from this endpoint,
	// resolved against the catalog uri, before they expire.
	cfgRefreshEndpoint = "client.refresh-credentials-endpoint"
	cfgRefreshEnabled  = "client.refresh-credentials-enabled"
)

// storageCredential is the spec's StorageCredential: config applies to
// every location starting with prefix.
type storageCredential struct {
	Prefix string            `json:"prefix"`
	Config map[string]string `json:"config"`
}

// tableAccess is how a LoadTableResult lets the client reach the table's
// files: its config, and the vended credentials if any.
type tableAccess struct {
	config      []byte
	credentials []storageCredential
}

// signs reports whether a warehouse's answers to r carry the signing
// config: it signs, and the client asked or the warehouse always does.
func (wr *warehouseRef) signs(r *http.Request) bool {
	rs := wr.wh.signing
	return rs != nil && (rs.Always || delegationAsked(r, "remote-signing"))
}

// vends reports whether a warehouse's answers to r carry vended
// credentials: it vends, the client asked (or the warehouse always
// vends), and it does not sign for r.
func (wr *warehouseRef) vends(r *http.Request) bool {
	vc := wr.wh.vending
	return vc != nil && (vc.Always || delegationAsked(r, "vended-credentials")) && !wr.signs(r)
}

// tableAccess returns how a LoadTableResult for table id (whose metadata
// is meta) lets the client reach its files: the signing config, vended
// credentials, or the warehouse's plain config. Vending can be refused (a
// principal who may not read the table's files, a location no session
// policy can name) or fail (STS); the error is the answer, counted and
// logged, and nothing is vended.
func (a *api) tableAccess(w http.ResponseWriter, r *http.Request, wr *warehouseRef, id identifier, meta table.Metadata) (tableAccess, error) {
	if !wr.vends(r) {
		cfg, _ := a.tableConfig(r, wr, id)
		return tableAccess{config: cfg}, nil
	}
	cred, err := a.vend(w, r, wr, id, meta)
	if err != nil {
		return tableAccess{}, err
	}
	cfg := make(map[string]string, len(wr.wh.clientConfig)+8)
	for k, v := range wr.wh.clientConfig {
		cfg[k] = v
	}
	for k, v := range cred.Config {
		cfg[k] = v
	}
	// Engines that read only the config (Trino, PyIceberg, iceberg-go)
	// find the credentials there; Java's S3FileIO prefers the storage
	// credential for the locations below its prefix and uses the
	// config's for any other (a write.data.path elsewhere).
	cfg[cfgRefreshEndpoint] = tableRoute(wr, id) + "/credentials"
	cfg[cfgRefreshEnabled] = "true"
	data, err := json.Marshal(cfg)
	if err != nil {
		return tableAccess{}, internalError(err)
	}
	return tableAccess{config: data, credentials: []storageCredential{cred}}, nil
}

// tableRoute is the path of table id's routes under the warehouse's
// prefix, relative to the catalog URI as clients resolve it.
func tableRoute(wr *warehouseRef, id identifier) string {
	return "v1/" + escapePrefix(wr.spec) + "/namespaces/" + url.PathEscape(strings.Join(id.Namespace, namespaceSeparator)) +
		"/tables/" + url.PathEscape(id.Name)
}

// vend decides what the principal of r may do with table id's files and
// vends credentials for exactly that, as one storage credential for the
// table's location.
func (a *api) vend(w http.ResponseWriter, r *http.Request, wr *warehouseRef, id identifier, meta table.Metadata) (storageCredential, error) {
	ctx := r.Context()
	scope := wr.wh.files.FileScopeOf(meta)
	if scope.Location == "" {
		return storageCredential{}, a.refuseVend(w, r, vendRefusedLocation, id,
			newError(http.StatusForbidden, typeForbidden, "Forbidden: table %s's location %s is not inside warehouse %s: no credentials are vended for it", id, meta.Location(), wr.wh.name))
	}
	ask := func(_ context.Context, in policy.Input) error { return a.guard.Check(r, in) }
	denied := func(err error) bool { _, ok := errors.AsType[*authz.DeniedError](err); return ok }
	d, err := s3vend.Decide(ctx, ask, denied, s3vend.Request{
		Ref: wr.ref, Branch: wr.branch != "", Table: []string(id.key()), TableLocation: scope.Location, Prefixes: scope.Prefixes(),
	})
	if err != nil {
		if denied(err) {
			return storageCredential{}, a.refuseVend(w, r, vendRefusedPolicy, id, err)
		}
		return storageCredential{}, err
	}
	c, err := wr.wh.vendor.Vend(ctx, d.Grant, a.principal(r))
	switch {
	case errors.Is(err, s3vend.ErrUnsupportedLocation):
		return storageCredential{}, a.refuseVend(w, r, vendRefusedLocation, id,
			newError(http.StatusForbidden, typeForbidden, "Forbidden: no credentials can be vended for table %s: %v", id, err))
	case errors.Is(err, s3vend.ErrSTS):
		a.refuseVend(w, r, vendRefusedSTS, id, err)
		return storageCredential{}, &apiError{status: http.StatusServiceUnavailable, typ: typeServiceUnavailable,
			msg: "the warehouse's STS did not vend credentials; try again later", cause: err}
	case err != nil:
		return storageCredential{}, err
	}
	access := "read"
	if d.Grant.Write {
		access = "write"
	}
	a.metrics.vended.WithLabelValues(access).Inc()
	a.logger.DebugContext(ctx, "storage credentials vended", "table", id.String(), "principal", a.principal(r), "access", access,
		"read_only_because", d.ReadOnly, "expires", c.Expiration, "request_id", requestID(w))
	cfg := map[string]string{
		cfgS3AccessKeyID:        c.AccessKeyID,
		cfgS3SecretAccessKey:    c.SecretAccessKey,
		cfgS3SessionToken:       c.SessionToken,
		cfgS3SessionExpiresAtMS: strconv.FormatInt(c.Expiration.UnixMilli(), 10),
	}
	// Where and how to reach the store travel with the keys, so a
	// credential is usable on its own (the /credentials answer).
	for _, k := range []string{"s3.endpoint", "s3.region", "client.region", "s3.path-style-access", "s3.force-virtual-addressing"} {
		if v, ok := wr.wh.clientConfig[k]; ok {
			cfg[k] = v
		}
	}
	return storageCredential{Prefix: scope.Location, Config: cfg}, nil
}

// refuseVend counts and logs a refused vend and returns err, the answer.
func (a *api) refuseVend(w http.ResponseWriter, r *http.Request, reason string, id identifier, err error) error {
	a.metrics.vendRefusals.WithLabelValues(reason).Inc()
	a.logger.WarnContext(r.Context(), "storage credentials not vended", "reason", reason, "table", id.String(),
		"principal", a.principal(r), "error", err, "request_id", requestID(w))
	return err
}

// loadTableReply is the LoadTableResult of table id (metadata meta, its
// file at location, served as body) with access, the config and
// credentials of tableAccess.
func loadTableReply(access tableAccess, location string, body []byte) *reply {
	rp := metadataReply(location, body, access.config)
	if access.credentials == nil {
		return rp
	}
	creds, err := json.Marshal(access.credentials)
	if err != nil {
		return jsonReply(http.StatusInternalServerError, errorBody{Error: errorModel{Message: "encoding credentials", Type: typeInternalServerError, Code: 500}})
	}
	// metadataReply's last piece closes the object: the credentials go
	// just before.
	last := rp.body[len(rp.body)-1]
	tail := make([]byte, 0, len(last)+len(creds)+32)
	tail = append(tail, strings.TrimSuffix(string(last), "}\n")...)
	tail = append(tail, `,"storage-credentials":`...)
	tail = append(tail, creds...)
	tail = append(tail, "}\n"...)
	rp.body[len(rp.body)-1] = tail
	return rp
}

// loadCredentials answers the spec's loadCredentials: fresh credentials
// for the table, as its LoadTableResult would carry them. A warehouse
// that does not vend (file://, or S3 with signing only) answers an empty
// list.
func (a *api) loadCredentials(w http.ResponseWriter, r *http.Request) error {
	wr, id, err := a.entityOf(r, tableKind)
	if err != nil {
		return err
	}
	if wr.wh.vending == nil {
		if _, err := a.lookupEntity(r.Context(), wr.hash, id, tableKind); err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, struct {
			StorageCredentials []storageCredential `json:"storage-credentials"`
		}{StorageCredentials: []storageCredential{}})
		return nil
	}
	_, file, err := a.loadTableAt(r.Context(), wr.hash, id)
	if err != nil {
		return err
	}
	cred, err := a.vend(w, r, wr, id, file.Metadata)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, struct {
		StorageCredentials []storageCredential `json:"storage-credentials"`
	}{StorageCredentials: []storageCredential{cred}})
	return nil
}
