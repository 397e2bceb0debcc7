package icebergrest

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/floe-catalog/floe/iceberg/s3sign"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/rest/authz"
)

// RemoteSigning makes a warehouse on S3 sign its engines' requests
// (POST .../tables/{table}/sign), so engines reach the object store
// without credentials of their own and can do only what floe signs:
// reads and writes of one table's files, never a deletion.
type RemoteSigning struct {
	// Credentials are floe's own, which every signature carries.
	Credentials s3sign.Credentials
	// Endpoint is the S3 API every signed URI must name.
	Endpoint s3sign.Endpoint
	// Always hands the signing config to every loadTable, createTable
	// and registerTable answer; otherwise only to clients that ask with
	// X-Iceberg-Access-Delegation: remote-signing.
	Always bool
	// URI, if set, is the base URI engines resolve the signer endpoint
	// against (signer.uri, s3.signer.uri), for a catalog they reach at
	// another address than the one they use for signing; empty means the
	// catalog's own URI, which is what clients default to.
	URI string
}

// Reasons of sign refusals counted besides s3sign's.
const (
	refusedNoTable  = "no-table"
	refusedReadOnly = "read-only"
	refusedPolicy   = "policy"
	refusedNoSigner = "not-configured"
)

// legacySignPath is where Iceberg 1.5 to 1.11 clients send sign requests
// when a table's config names no signer endpoint. It names no table, so
// floe cannot scope a request sent there; floe always names the table's
// own endpoint (signConfig), and answers this one with how to get it.
const legacySignPath = "/v1/aws/s3/sign"

// signRequest answers the spec's signRequest: it signs one S3 request for
// the table, with floe's credentials, if floe and the policy allow it.
// Every refusal is counted and logged, and nothing is signed.
func (a *api) signRequest(w http.ResponseWriter, r *http.Request) error {
	wr, id, err := a.entityOf(r, tableKind)
	if err != nil {
		return err
	}
	rs := wr.wh.signing
	if rs == nil {
		return a.refuseSign(r, w, refusedNoSigner, badRequest("warehouse %s does not sign storage requests: it is not an s3:// warehouse with remote signing turned on", wr.wh.name), nil, id)
	}
	data, err := readBody(r)
	if err != nil {
		return a.refuseSign(r, w, string(s3sign.ReasonMalformed), err, nil, id)
	}
	req, err := s3sign.ParseRequest(data)
	if err != nil {
		return a.refuseSign(r, w, string(s3sign.ReasonMalformed), badRequest("%v", err), nil, id)
	}
	access, err := rs.Endpoint.Classify(req)
	if err != nil {
		return a.refuseSignError(r, w, err, req, id)
	}
	if !wr.wh.holdsBucket(access.Bucket) {
		return a.refuseSign(r, w, string(s3sign.ReasonBucket),
			newError(http.StatusForbidden, typeForbidden, "Forbidden: bucket %s is not warehouse %s's (%s)", access.Bucket, wr.wh.name, wr.wh.files.Location()), &access, id)
	}
	_, file, err := a.loadTableAt(r.Context(), wr.hash, id)
	if err != nil {
		if ae, ok := errors.AsType[*apiError](err); ok && ae.status == http.StatusNotFound {
			return a.refuseSign(r, w, refusedNoTable, err, &access, id)
		}
		return err
	}
	scope := wr.wh.files.FileScopeOf(file.Metadata)
	loc := (&url.URL{Scheme: "s3", Host: access.Bucket, Path: "/" + access.Key}).String()
	if !scope.Holds(loc, access.Operation == s3sign.OpListObjects) {
		return a.refuseSign(r, w, string(s3sign.ReasonOutsideTable),
			newError(http.StatusForbidden, typeForbidden, "Forbidden: %s is not a file of table %s (at %s)", loc, id, scope.Location), &access, id)
	}
	in := policy.Input{
		Action: policy.ActionStorageRead,
		Ref:    wr.ref,
		Storage: &policy.StorageRequest{Provider: "s3", Method: access.Method, Operation: access.Operation,
			Bucket: access.Bucket, Key: access.Key, Table: []string(id.key()), TableLocation: scope.Location},
	}
	if access.Write {
		if wr.branch == "" {
			return a.refuseSign(r, w, refusedReadOnly, newError(http.StatusForbidden, typeForbidden, "Forbidden: %s: no file of it is written", wr.readOnly), &access, id)
		}
		in.Action = policy.ActionStorageWrite
		in.Contents = []policy.Content{content(id.key(), policy.TypeTable, policy.ChangeUpdate)}
	} else if err := a.authorizeRead(r, wr); err != nil {
		return a.refuseSignError(r, w, err, req, id)
	}
	if err := a.guard.Check(r, in); err != nil {
		return a.refuseSignError(r, w, err, req, id)
	}
	signed, err := wr.wh.signer.Sign(r.Context(), req)
	if err != nil {
		return internalError(err)
	}
	a.metrics.signatures.WithLabelValues(access.Operation).Inc()
	// The spec's cache hint: Java clients reuse a read's signature for up
	// to 30 seconds (and for any Range of the object, which is unsigned);
	// a write's never.
	if access.Write {
		w.Header().Set("Cache-Control", "no-cache")
	} else {
		w.Header().Set("Cache-Control", "private")
	}
	writeJSON(w, http.StatusOK, signed)
	return nil
}

// refuseSignError refuses with err, counted under its own reason: an
// s3sign refusal, a policy denial, or anything else (answered as err).
func (a *api) refuseSignError(r *http.Request, w http.ResponseWriter, err error, req *s3sign.Request, id identifier) error {
	if re, ok := errors.AsType[*s3sign.RefusedError](err); ok {
		ae := newError(http.StatusForbidden, typeForbidden, "Forbidden: %s", re.Error())
		if re.Reason == s3sign.ReasonMalformed {
			ae = badRequest("%s", re.Error())
		}
		return a.refuseSign(r, w, string(re.Reason), ae, nil, id, "method", req.Method, "uri", redactURI(req.URI))
	}
	if _, ok := errors.AsType[*authz.DeniedError](err); ok {
		return a.refuseSign(r, w, refusedPolicy, err, nil, id, "method", req.Method, "uri", redactURI(req.URI))
	}
	return err
}

// refuseSign counts and logs a refused sign request and returns err, the
// answer.
func (a *api) refuseSign(r *http.Request, w http.ResponseWriter, reason string, err error, access *s3sign.Access, id identifier, attrs ...any) error {
	a.metrics.signRefusals.WithLabelValues(reason).Inc()
	attrs = append(attrs, "reason", reason, "table", id.String(), "principal", a.principal(r), "error", err, "request_id", requestID(w))
	if access != nil {
		attrs = append(attrs, "method", access.Method, "operation", access.Operation, "bucket", access.Bucket, "key", access.Key)
	}
	a.logger.WarnContext(r.Context(), "storage request not signed", attrs...)
	return err
}

// redactURI keeps a URI's scheme, host and path for logs.
func redactURI(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(malformed)"
	}
	u.RawQuery, u.User = "", nil
	return u.String()
}

// legacySign answers sign requests sent to the endpoint Iceberg clients
// fell back to before 1.12, which names no table.
func (a *api) legacySign(w http.ResponseWriter, r *http.Request) error {
	a.metrics.signRefusals.WithLabelValues(refusedNoTable).Inc()
	return badRequest("floe signs storage requests per table, at POST /v1/{prefix}/namespaces/{namespace}/tables/{table}/sign; " +
		"load the table with X-Iceberg-Access-Delegation: remote-signing and its config names the endpoint (signer.endpoint, s3.signer.endpoint)")
}

// delegationAsked reports whether the client asked for remote signing
// (X-Iceberg-Access-Delegation, a comma-separated list).
func delegationAsked(r *http.Request, mechanism string) bool {
	for _, v := range r.Header.Values("X-Iceberg-Access-Delegation") {
		for m := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(m), mechanism) {
				return true
			}
		}
	}
	return false
}

// javaClientAtLeast reports whether the request comes from the Iceberg
// Java client of version major.minor or later, which names itself in
// X-Client-Version ("Apache Iceberg 1.12.0 (commit 1a2b3c)").
func javaClientAtLeast(r *http.Request, major, minor int) bool {
	v, ok := strings.CutPrefix(r.Header.Get("X-Client-Version"), "Apache Iceberg ")
	if !ok {
		return false
	}
	v, _, _ = strings.Cut(v, " ")
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 {
		return false
	}
	maj, err1 := strconv.Atoi(parts[0])
	mnr, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return maj > major || maj == major && mnr >= minor
}

// Config keys that tell clients of each generation to sign remotely.
const (
	cfgRemoteSigningEnabled = "s3.remote-signing-enabled" // Java S3FileIO, iceberg-go
	cfgSignerEndpoint       = "signer.endpoint"           // Java 1.11 (deprecated by 1.12)
	cfgSignerURI            = "signer.uri"
	cfgS3SignerEndpoint     = "s3.signer.endpoint" // Java 1.5 to 1.10, PyIceberg
	cfgS3SignerURI          = "s3.signer.uri"
	cfgS3Signer             = "s3.signer"  // PyIceberg: which signer class
	cfgPyIOImpl             = "py-io-impl" // PyIceberg signs only with its fsspec IO
)

// tableConfig is the config of a LoadTableResult for table id: the
// warehouse's client config, plus the signing config when the warehouse
// signs and the client asked for it (or the warehouse always hands it
// out); then without static credentials, which signing replaces.
func (a *api) tableConfig(r *http.Request, wr *warehouseRef, id identifier) ([]byte, map[string]string) {
	rs := wr.wh.signing
	if rs == nil || !rs.Always && !delegationAsked(r, "remote-signing") {
		return wr.wh.clientConfigJSON, wr.wh.clientConfig
	}
	cfg := make(map[string]string, len(wr.wh.clientConfig)+8)
	for k, v := range wr.wh.clientConfig {
		cfg[k] = v
	}
	delete(cfg, "s3.access-key-id")
	delete(cfg, "s3.secret-access-key")
	delete(cfg, "s3.session-token")
	endpoint := "v1/" + escapePrefix(wr.spec) + "/namespaces/" + url.PathEscape(strings.Join(id.Namespace, namespaceSeparator)) +
		"/tables/" + url.PathEscape(id.Name) + "/sign"
	cfg[cfgRemoteSigningEnabled] = "true"
	cfg[cfgS3SignerEndpoint] = endpoint
	cfg[cfgS3Signer] = "S3V4RestSigner"
	cfg[cfgPyIOImpl] = "pyiceberg.io.fsspec.FsspecFileIO"
	// Java 1.12 names the table's sign route itself
	// (rest.remote-signing.endpoint, the route floe serves) and logs a
	// deprecation warning at every FileIO it builds when signer.endpoint
	// or signer.uri is set; 1.11 needs them.
	derives := javaClientAtLeast(r, 1, 12)
	if !derives {
		cfg[cfgSignerEndpoint] = endpoint
	}
	if rs.URI != "" {
		// A signer at another address than the catalog's can be named
		// to 1.12 only by the deprecated key.
		cfg[cfgSignerURI] = rs.URI
		cfg[cfgS3SignerURI] = rs.URI
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		return wr.wh.clientConfigJSON, wr.wh.clientConfig // a map of strings always encodes
	}
	return data, cfg
}
