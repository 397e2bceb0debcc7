package nessie

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/versionstore"
)

// Nessie's error codes (ErrorCode.java).
const (
	codeReferenceNotFound      = "REFERENCE_NOT_FOUND"
	codeReferenceAlreadyExists = "REFERENCE_ALREADY_EXISTS"
	codeContentNotFound        = "CONTENT_NOT_FOUND"
	codeReferenceConflict      = "REFERENCE_CONFLICT"
	codeBadRequest             = "BAD_REQUEST"
	codeServiceUnavailable     = "SERVICE_UNAVAILABLE"
	codeForbidden              = "FORBIDDEN"
	codeUnknown                = "UNKNOWN"
	// codeNotFound is for paths outside the API; Nessie has no code for
	// them, so they carry UNKNOWN with status 404.
	codeNotFound = "UNKNOWN"
)

// apiError is an error with its Nessie status, code and details.
type apiError struct {
	status  int
	code    string
	msg     string
	details any
	err     error // the cause, for logs
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.err }

func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, code: codeBadRequest, msg: fmt.Sprintf(format, args...)}
}

// errorBody is NessieError.
type errorBody struct {
	Status       int    `json:"status"`
	Reason       string `json:"reason"`
	Message      string `json:"message"`
	ErrorCode    string `json:"errorCode"`
	ErrorDetails any    `json:"errorDetails,omitempty"`
}

// referenceConflicts is ReferenceConflicts, the details of a
// REFERENCE_CONFLICT.
type referenceConflicts struct {
	Type      string         `json:"type"`
	Conflicts []conflictJSON `json:"conflicts"`
}

type conflictJSON struct {
	ConflictType string   `json:"conflictType"`
	Key          *keyJSON `json:"key,omitempty"`
	Message      string   `json:"message"`
}

func conflictsJSON(cs []versionstore.Conflict) []conflictJSON {
	out := make([]conflictJSON, 0, len(cs))
	for _, c := range cs {
		out = append(out, conflictToJSON(c))
	}
	return out
}

func conflictToJSON(c versionstore.Conflict) conflictJSON {
	j := conflictJSON{ConflictType: string(c.Type), Message: c.Message}
	if len(c.Key) > 0 {
		j.Key = keyToJSON(c.Key)
	}
	return j
}

// classify maps an error to Nessie's status and code.
func classify(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var ce *versionstore.ConflictError
	var de *authz.DeniedError
	switch {
	case errors.As(err, &de):
		return &apiError{status: http.StatusForbidden, code: codeForbidden, err: err,
			msg: "Forbidden: " + strings.Join(de.Decision.Reasons, "; ")}
	case errors.Is(err, authz.ErrUnavailable):
		return &apiError{status: http.StatusServiceUnavailable, code: codeServiceUnavailable, err: err,
			msg: "authorization is unavailable; try again later"}
	case errors.As(err, &ce):
		return &apiError{status: http.StatusConflict, code: codeReferenceConflict, msg: err.Error(), err: err,
			details: referenceConflicts{Type: "REFERENCE_CONFLICTS", Conflicts: conflictsJSON(ce.Conflicts)}}
	case errors.Is(err, versionstore.ErrReferenceConflict):
		return &apiError{status: http.StatusConflict, code: codeReferenceConflict, msg: err.Error(), err: err}
	case errors.Is(err, versionstore.ErrReferenceNotFound), errors.Is(err, versionstore.ErrCommitNotFound):
		return &apiError{status: http.StatusNotFound, code: codeReferenceNotFound, msg: err.Error(), err: err}
	case errors.Is(err, versionstore.ErrReferenceExists):
		return &apiError{status: http.StatusConflict, code: codeReferenceAlreadyExists, msg: err.Error(), err: err}
	case errors.Is(err, versionstore.ErrContentNotFound):
		return &apiError{status: http.StatusNotFound, code: codeContentNotFound, msg: err.Error(), err: err}
	case errors.Is(err, versionstore.ErrInvalid), errors.Is(err, versionstore.ErrNotABranch),
		errors.Is(err, versionstore.ErrForbidden):
		return &apiError{status: http.StatusBadRequest, code: codeBadRequest, msg: err.Error(), err: err}
	case errors.Is(err, versionstore.ErrClosed), errors.Is(err, versionstore.ErrUnavailable):
		return &apiError{status: http.StatusServiceUnavailable, code: codeServiceUnavailable, msg: err.Error(), err: err}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: http.StatusServiceUnavailable, code: codeServiceUnavailable, msg: err.Error(), err: err}
	default:
		return &apiError{status: http.StatusInternalServerError, code: codeUnknown, msg: "internal error: " + err.Error(), err: err}
	}
}

// writeError answers err in Nessie's error model.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := classify(err)
	if ae.status >= 500 {
		a.logger.ErrorContext(r.Context(), "nessie API request failed", "method", r.Method, "path", r.URL.EscapedPath(), "error", err)
	}
	writeJSON(w, ae.status, errorBody{
		Status: ae.status, Reason: http.StatusText(ae.status), Message: ae.msg,
		ErrorCode: ae.code, ErrorDetails: ae.details,
	})
}
