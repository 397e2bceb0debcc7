package s3sign

import (
	"net/http"
	"net/url"
	"strings"
)

// Operations floe signs. Every other S3 operation is refused.
const (
	OpGetObject               = "get-object"
	OpHeadObject              = "head-object"
	OpListObjects             = "list-objects"
	OpPutObject               = "put-object"
	OpCreateMultipartUpload   = "create-multipart-upload"
	OpUploadPart              = "upload-part"
	OpCompleteMultipartUpload = "complete-multipart-upload"
)

// Access is what a sign request asks to do: one operation on one object
// (or, for a listing, one key prefix) of one bucket.
type Access struct {
	// Method is the HTTP method, upper case.
	Method string
	// Operation is one of the Op constants.
	Operation string
	Bucket    string
	// Key is the object key, decoded; for OpListObjects the listed
	// prefix.
	Key string
	// Write is true for the operations that create objects.
	Write bool
}

// Location is the object's location as Iceberg writes it:
// s3://<bucket>/<key>.
func (a Access) Location() string { return "s3://" + a.Bucket + "/" + a.Key }

// Endpoint is the S3 API the warehouse's objects are reached at, which
// every signed URI must name.
type Endpoint struct {
	// URL is the S3 API's base URL, e.g. http://127.0.0.1:9000; empty
	// means AWS (https://s3.<region>.amazonaws.com and the bucket
	// subdomains).
	URL string
}

// Classify reads what req asks to do, refusing (a *RefusedError) what no
// caller may sign: a URI that is not the endpoint's, a deletion, or an
// operation outside the allowlist. Which bucket and key may be touched
// is the caller's to check.
func (e Endpoint) Classify(req *Request) (Access, error) {
	u, err := url.Parse(req.URI)
	if err != nil {
		return Access{}, refuse(ReasonMalformed, "malformed uri %q: %v", req.URI, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" {
		return Access{}, refuse(ReasonMalformed, "uri %q is not a plain http(s) URL", req.URI)
	}
	bucket, rawKey, err := e.split(u)
	if err != nil {
		return Access{}, err
	}
	key, err := url.PathUnescape(rawKey)
	if err != nil {
		return Access{}, refuse(ReasonMalformed, "uri %q has a malformed key: %v", req.URI, err)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return Access{}, refuse(ReasonMalformed, "uri %q has a malformed query: %v", req.URI, err)
	}
	a := Access{Method: req.Method, Bucket: bucket, Key: key}
	if err := a.operation(req, q); err != nil {
		return Access{}, err
	}
	if err := checkKey(a.Key); err != nil {
		return Access{}, err
	}
	return a, nil
}

// split returns the bucket and the raw (escaped) key of u, addressed
// path-style (<endpoint>/<bucket>/<key>) or virtual-host style
// (<bucket>.<endpoint host>/<key>), if u names the endpoint.
func (e Endpoint) split(u *url.URL) (bucket, rawKey string, err error) {
	host := strings.ToLower(u.Host)
	path := strings.TrimPrefix(u.EscapedPath(), "/")
	if e.URL == "" {
		return splitAWS(u.Scheme, host, path)
	}
	ep, perr := url.Parse(e.URL)
	if perr != nil {
		return "", "", refuse(ReasonEndpoint, "the warehouse's S3 endpoint %q is malformed: %v", e.URL, perr)
	}
	epHost := strings.ToLower(ep.Host)
	if u.Scheme != ep.Scheme {
		return "", "", refuse(ReasonEndpoint, "uri %s is not on the warehouse's object store %s", u.Redacted(), e.URL)
	}
	switch {
	case host == epHost:
		bucket, rawKey, _ = strings.Cut(path, "/")
	case strings.HasSuffix(host, "."+epHost):
		bucket, rawKey = strings.TrimSuffix(host, "."+epHost), path
	default:
		return "", "", refuse(ReasonEndpoint, "uri %s is not on the warehouse's object store %s", u.Redacted(), e.URL)
	}
	if bucket == "" {
		return "", "", refuse(ReasonOperation, "uri %s names no bucket", u.Redacted())
	}
	return bucket, rawKey, nil
}

// splitAWS addresses the AWS S3 endpoints: s3.amazonaws.com,
// s3.<region>.amazonaws.com, their dualstack forms, and the bucket
// subdomains of each; only over https.
func splitAWS(scheme, host, path string) (bucket, rawKey string, err error) {
	h := strings.TrimSuffix(strings.TrimSuffix(host, ".cn"), ":443")
	if scheme != "https" || !strings.HasSuffix(h, ".amazonaws.com") {
		return "", "", refuse(ReasonEndpoint, "uri host %q is not an AWS S3 endpoint over https", host)
	}
	labels := strings.Split(strings.TrimSuffix(h, ".amazonaws.com"), ".")
	i := 0
	for i < len(labels) && labels[i] != "s3" && !strings.HasPrefix(labels[i], "s3-") {
		i++
	}
	if i == len(labels) {
		return "", "", refuse(ReasonEndpoint, "uri host %q is not an AWS S3 endpoint", host)
	}
	if i > 0 {
		return strings.Join(labels[:i], "."), path, nil
	}
	bucket, rawKey, _ = strings.Cut(path, "/")
	if bucket == "" {
		return "", "", refuse(ReasonOperation, "uri host %q names no bucket", host)
	}
	return bucket, rawKey, nil
}

// Query parameters each operation may carry besides its own. x-id is the
// operation name the Go SDK appends; response-* override response
// headers of a GET.
var (
	getParams  = map[string]bool{"x-id": true, "partNumber": true, "versionId": true}
	listParams = map[string]bool{"x-id": true, "list-type": true, "prefix": true, "delimiter": true, "continuation-token": true,
		"max-keys": true, "start-after": true, "encoding-type": true, "fetch-owner": true, "marker": true}
)

// operation sets a's operation from the method, the query and the
// headers, or refuses.
func (a *Access) operation(req *Request, q url.Values) error {
	only := func(allowed map[string]bool) bool {
		for k := range q {
			if !allowed[k] && !strings.HasPrefix(k, "response-") {
				return false
			}
		}
		return true
	}
	has := func(k string) bool { _, ok := q[k]; return ok }
	unsupported := func() error {
		return refuse(ReasonOperation, "floe does not sign this S3 request (%s %s with query %q): only object reads, puts and multipart uploads",
			req.Method, a.Location(), q.Encode())
	}
	switch req.Method {
	case http.MethodDelete:
		return refuse(ReasonDeletion, "floe never signs a deletion (%s %s): only floe's garbage collection deletes files", req.Method, a.Location())
	case http.MethodPost:
		if has("delete") {
			return refuse(ReasonDeletion, "floe never signs a deletion (DeleteObjects on bucket %s): only floe's garbage collection deletes files", a.Bucket)
		}
	}
	if _, copying := req.header("x-amz-copy-source"); copying {
		return refuse(ReasonOperation, "floe does not sign copies (%s %s with x-amz-copy-source)", req.Method, a.Location())
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead:
		if a.Key == "" {
			if req.Method != http.MethodGet || !only(listParams) {
				return unsupported()
			}
			a.Operation, a.Key = OpListObjects, q.Get("prefix")
			return nil
		}
		if !only(getParams) {
			return unsupported()
		}
		a.Operation = OpGetObject
		if req.Method == http.MethodHead {
			a.Operation = OpHeadObject
		}
		return nil
	case http.MethodPut:
		if a.Key == "" {
			return unsupported()
		}
		a.Write = true
		switch {
		case len(q) == 0 || only(map[string]bool{"x-id": true}):
			a.Operation = OpPutObject
		case has("partNumber") && has("uploadId") && only(map[string]bool{"x-id": true, "partNumber": true, "uploadId": true}):
			a.Operation = OpUploadPart
		default:
			return unsupported()
		}
		return nil
	case http.MethodPost:
		if a.Key == "" {
			return unsupported()
		}
		a.Write = true
		switch {
		case has("uploads") && only(map[string]bool{"x-id": true, "uploads": true}):
			a.Operation = OpCreateMultipartUpload
		case has("uploadId") && only(map[string]bool{"x-id": true, "uploadId": true}):
			a.Operation = OpCompleteMultipartUpload
		default:
			return unsupported()
		}
		return nil
	}
	return unsupported()
}

// checkKey refuses keys that mean something else to some object stores
// than to a prefix comparison: "." and ".." segments (S3 keeps them,
// MinIO and proxies may resolve them) and NUL.
func checkKey(key string) error {
	if key == "" {
		return refuse(ReasonOperation, "the request names no object key")
	}
	if strings.ContainsRune(key, 0) {
		return refuse(ReasonMalformed, "object key contains NUL")
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "." || seg == ".." {
			return refuse(ReasonOutsideTable, "object key %q contains a %q segment", key, seg)
		}
	}
	return nil
}
