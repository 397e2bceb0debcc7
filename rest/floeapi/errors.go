package floeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/versionstore"
)

// Error codes of the API's error model; the OpenAPI document lists them.
const (
	CodeBadRequest     = "BAD_REQUEST"
	CodeUnauthorized   = "UNAUTHORIZED"
	CodeForbidden      = "FORBIDDEN"
	CodeNotFound       = "NOT_FOUND"
	CodeConflict       = "CONFLICT"
	CodeNotImplemented = "NOT_IMPLEMENTED"
	CodeUnavailable    = "SERVICE_UNAVAILABLE"
	CodeInternal       = "INTERNAL_ERROR"
)

// ErrorBody is every error answer: {"error": {...}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong: the HTTP status again, a stable code
// for programs, a message for people, and details some codes carry.
type ErrorDetail struct {
	Status  int    `json:"status"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Details any    `json:"details,omitempty"`
}

// apiError is an error with its answer decided.
type apiError struct {
	status  int
	code    string
	msg     string
	details any
	err     error
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.err }

func badRequest(format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, code: CodeBadRequest, msg: fmt.Sprintf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &apiError{status: http.StatusNotFound, code: CodeNotFound, msg: fmt.Sprintf(format, args...)}
}

func conflict(details any, format string, args ...any) error {
	return &apiError{status: http.StatusConflict, code: CodeConflict, msg: fmt.Sprintf(format, args...), details: details}
}

// notConfigured answers an operation whose service this server was built
// without.
func notConfigured(what string) error {
	return &apiError{status: http.StatusNotImplemented, code: CodeNotImplemented,
		msg: what + " is not configured on this server"}
}

// classify maps an error to its answer.
func classify(err error) *apiError {
	if ae, ok := errors.AsType[*apiError](err); ok {
		return ae
	}
	switch {
	case errors.Is(err, authz.ErrUnavailable):
		return &apiError{status: http.StatusServiceUnavailable, code: CodeUnavailable, err: err,
			msg: "authorization is unavailable; try again later"}
	case errors.Is(err, versionstore.ErrReferenceNotFound), errors.Is(err, versionstore.ErrCommitNotFound),
		errors.Is(err, versionstore.ErrContentNotFound):
		return &apiError{status: http.StatusNotFound, code: CodeNotFound, msg: err.Error(), err: err}
	case errors.Is(err, versionstore.ErrReferenceConflict), errors.Is(err, versionstore.ErrReferenceExists):
		return &apiError{status: http.StatusConflict, code: CodeConflict, msg: err.Error(), err: err}
	case errors.Is(err, versionstore.ErrInvalid), errors.Is(err, versionstore.ErrNotABranch),
		errors.Is(err, versionstore.ErrForbidden):
		return &apiError{status: http.StatusBadRequest, code: CodeBadRequest, msg: err.Error(), err: err}
	case errors.Is(err, versionstore.ErrClosed), errors.Is(err, versionstore.ErrUnavailable), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: http.StatusServiceUnavailable, code: CodeUnavailable, msg: err.Error(), err: err}
	}
	if de, ok := errors.AsType[*authz.DeniedError](err); ok {
		return &apiError{status: http.StatusForbidden, code: CodeForbidden, err: err,
			msg: "forbidden: " + strings.Join(de.Decision.Reasons, "; ")}
	}
	return &apiError{status: http.StatusInternalServerError, code: CodeInternal, msg: "internal error: " + err.Error(), err: err}
}

func (a *API) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ae := classify(err)
	if ae.status >= 500 && ae.status != http.StatusNotImplemented {
		a.logger.ErrorContext(r.Context(), "floe API request failed", "method", r.Method, "path", r.URL.EscapedPath(), "error", err)
	}
	writeJSON(w, ae.status, ErrorBody{Error: ErrorDetail{Status: ae.status, Code: ae.code, Message: ae.msg, Details: ae.details}})
}

// unauthenticated answers a request without valid credentials, with one
// message whatever was wrong.
func (a *API) unauthenticated(w http.ResponseWriter, r *http.Request, err error) {
	a.logger.DebugContext(r.Context(), "floe API request not authenticated",
		"method", r.Method, "path", r.URL.EscapedPath(), "error", err)
	writeJSON(w, http.StatusUnauthorized, ErrorBody{Error: ErrorDetail{Status: http.StatusUnauthorized,
		Code: CodeUnauthorized, Message: "not authorized: missing or invalid bearer token"}})
}
