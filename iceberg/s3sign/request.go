package s3sign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// MaxRequestBytes bounds a sign request's JSON. Engines send one URI and a
// few dozen headers; a DeleteObjects body (which floe refuses anyway) is
// the only large thing the spec lets a client put in.
const MaxRequestBytes = 256 << 10

// Request is the spec's RemoteSignRequest, which Iceberg 1.5 to 1.10
// clients sent as S3SignRequest: the same fields without provider.
type Request struct {
	Region string `json:"region"`
	// URI is the full URL of the S3 request, e.g.
	// http://127.0.0.1:9000/bucket/wh/t/data/f.parquet?x-id=PutObject.
	URI    string `json:"uri"`
	Method string `json:"method"`
	// Headers are the request's headers, each with its values.
	Headers    map[string][]string `json:"headers"`
	Properties map[string]string   `json:"properties,omitempty"`
	// Body is sent only for DeleteObjects, which is refused.
	Body *string `json:"body,omitempty"`
	// Provider is "s3" or absent (which means s3).
	Provider string `json:"provider,omitempty"`
}

// ParseRequest decodes and checks a sign request: the required fields are
// present and the method is one HTTP names. It says nothing of whether
// the request may be signed (Classify).
func ParseRequest(data []byte) (*Request, error) {
	if len(data) > MaxRequestBytes {
		return nil, refuse(ReasonMalformed, "the sign request is %d bytes, more than %d", len(data), MaxRequestBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var req Request
	if err := dec.Decode(&req); err != nil {
		return nil, refuse(ReasonMalformed, "malformed sign request: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, refuse(ReasonMalformed, "malformed sign request: data after the JSON object")
	}
	switch {
	case req.URI == "":
		return nil, refuse(ReasonMalformed, "sign request has no uri")
	case req.Method == "":
		return nil, refuse(ReasonMalformed, "sign request has no method")
	case req.Headers == nil:
		return nil, refuse(ReasonMalformed, "sign request has no headers")
	}
	if req.Provider != "" && !strings.EqualFold(req.Provider, "s3") {
		return nil, refuse(ReasonMalformed, "sign request for storage provider %q: floe signs s3 requests only", req.Provider)
	}
	req.Method = strings.ToUpper(req.Method)
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodPatch, http.MethodOptions:
	default:
		return nil, refuse(ReasonMalformed, "sign request method %q is not one of GET, HEAD, PUT, POST, DELETE, PATCH, OPTIONS", req.Method)
	}
	for name, values := range req.Headers {
		if name == "" || strings.ContainsAny(name, " \t\r\n:") {
			return nil, refuse(ReasonMalformed, "sign request header name %q is not a header name", name)
		}
		for _, v := range values {
			if strings.ContainsAny(v, "\r\n\x00") {
				return nil, refuse(ReasonMalformed, "sign request header %s has a value with a line break", name)
			}
		}
	}
	return &req, nil
}

// header returns the first value of the named header, case-insensitively,
// and whether it is present.
func (r *Request) header(name string) (string, bool) {
	for k, vs := range r.Headers {
		if strings.EqualFold(k, name) {
			if len(vs) == 0 {
				return "", true
			}
			return vs[0], true
		}
	}
	return "", false
}

// Reason names why a request was refused, as metrics and logs count it.
type Reason string

// The reasons this package refuses for; the facade adds its own (the
// table, the policy).
const (
	// ReasonMalformed: the request could not be read.
	ReasonMalformed Reason = "malformed"
	// ReasonDeletion: DELETE, DeleteObjects or AbortMultipartUpload.
	ReasonDeletion Reason = "deletion"
	// ReasonOperation: an S3 operation outside the allowlist (copies,
	// ACLs, tagging, bucket operations, ...).
	ReasonOperation Reason = "operation"
	// ReasonEndpoint: the URI names another host than the warehouse's
	// object store.
	ReasonEndpoint Reason = "endpoint"
	// ReasonBucket: a bucket that is not the warehouse's.
	ReasonBucket Reason = "bucket"
	// ReasonOutsideTable: a key outside the table's locations.
	ReasonOutsideTable Reason = "outside-table"
)

// RefusedError is a request floe will not sign, whoever asks.
type RefusedError struct {
	Reason Reason
	msg    string
}

func (e *RefusedError) Error() string { return e.msg }

func refuse(reason Reason, format string, args ...any) *RefusedError {
	return &RefusedError{Reason: reason, msg: fmt.Sprintf(format, args...)}
}
