package icebergrest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/floe-catalog/floe/catalog"
	"github.com/floe-catalog/floe/rest/authz"
	"github.com/floe-catalog/floe/versionstore"
)

// The Iceberg error types floe answers with. Clients pick exceptions by HTTP
// status and these names (Java's ErrorHandlers, iceberg-go, PyIceberg), so
// they are the Java simple class names.
const (
	typeBadRequest          = "BadRequestException"
	typeIllegalArgument     = "IllegalArgumentException"
	typeForbidden           = "ForbiddenException"
	typeNotAuthorized       = "NotAuthorizedException"
	typeNoSuchWarehouse     = "NoSuchWarehouseException"
	typeNoSuchNamespace     = "NoSuchNamespaceException"
	typeNoSuchTable         = "NoSuchTableException"
	typeNoSuchView          = "NoSuchViewException"
	typeNotFound            = "NotFoundException"
	typeAlreadyExists       = "AlreadyExistsException"
	typeNamespaceNotEmpty   = "NamespaceNotEmptyException"
	typeCommitFailed        = "CommitFailedException"
	typeCommitStateUnknown  = "CommitStateUnknownException"
	typeUnprocessable       = "UnprocessableEntityException"
	typeServiceUnavailable  = "ServiceUnavailableException"
	typeInternalServerError = "InternalServerError"
)

// apiError is an error with its place in the Iceberg error model. Handlers
// return them; writeError turns any error into the JSON body.
type apiError struct {
	status int
	typ    string
	msg    string
	cause  error // logged, never sent
}

func (e *apiError) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%s (%d): %s: %v", e.typ, e.status, e.msg, e.cause)
	}
	return fmt.Sprintf("%s (%d): %s", e.typ, e.status, e.msg)
}

func (e *apiError) Unwrap() error { return e.cause }

func newError(status int, typ, format string, args ...any) *apiError {
	return &apiError{status: status, typ: typ, msg: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return newError(http.StatusBadRequest, typeBadRequest, format, args...)
}

func commitFailed(format string, args ...any) *apiError {
	return newError(http.StatusConflict, typeCommitFailed, format, args...)
}

// internalError marks a failure of storage the catalog relies on.
func internalError(err error) error {
	return &apiError{status: http.StatusInternalServerError, typ: typeInternalServerError, msg: err.Error(), cause: err}
}

// errorBody is the IcebergErrorResponse schema.
type errorBody struct {
	Error errorModel `json:"error"`
}

type errorModel struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Code    int    `json:"code"`
}

// classify maps any error a handler returns onto the error model. Errors
// that are not apiErrors come from the store, storage or the request
// context; the ones callers can act on get their own status, anything else
// is a 500.
func classify(err error) *apiError {
	if ae, ok := errors.AsType[*apiError](err); ok {
		return ae
	}
	if ce, ok := errors.AsType[*catalog.Error](err); ok {
		return fromCatalog(ce)
	}
	if de, ok := errors.AsType[*authz.DeniedError](err); ok {
		return &apiError{status: http.StatusForbidden, typ: typeForbidden, msg: "Forbidden: " + strings.Join(de.Decision.Reasons, "; "), cause: err}
	}
	switch {
	case errors.Is(err, authz.ErrUnavailable):
		return &apiError{status: http.StatusServiceUnavailable, typ: typeServiceUnavailable, msg: "authorization is unavailable; try again later", cause: err}
	case errors.Is(err, versionstore.ErrInvalid):
		return &apiError{status: http.StatusBadRequest, typ: typeBadRequest, msg: err.Error(), cause: err}
	case errors.Is(err, versionstore.ErrReferenceNotFound), errors.Is(err, versionstore.ErrCommitNotFound):
		return &apiError{status: http.StatusNotFound, typ: typeNoSuchWarehouse, msg: err.Error(), cause: err}
	case errors.Is(err, versionstore.ErrNotABranch), errors.Is(err, versionstore.ErrForbidden):
		return &apiError{status: http.StatusForbidden, typ: typeForbidden, msg: err.Error(), cause: err}
	case errors.Is(err, versionstore.ErrClosed):
		return &apiError{status: http.StatusServiceUnavailable, typ: typeServiceUnavailable, msg: "the catalog is shutting down", cause: err}
	case errors.Is(err, versionstore.ErrOutcomeUnknown):
		return &apiError{status: http.StatusInternalServerError, typ: typeInternalServerError, msg: "the catalog could not confirm the change, it may or may not have happened; check before retrying: " + err.Error(), cause: err}
	case errors.Is(err, versionstore.ErrUnavailable):
		return &apiError{status: http.StatusServiceUnavailable, typ: typeServiceUnavailable, msg: "the catalog's storage cannot take the request now, nothing was changed; try again later: " + err.Error(), cause: err}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &apiError{status: http.StatusServiceUnavailable, typ: typeServiceUnavailable, msg: "request cancelled or timed out", cause: err}
	}
	return &apiError{status: http.StatusInternalServerError, typ: typeInternalServerError, msg: "internal error", cause: err}
}

// writeError answers with the error model. HEAD answers carry no body,
// but the headers a GET would have (RFC 9110 9.3.2), as the spec lists.
func writeError(w http.ResponseWriter, r *http.Request, ae *apiError) {
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(ae.status)
		return
	}
	writeJSON(w, ae.status, errorBody{Error: errorModel{Message: ae.msg, Type: ae.typ, Code: ae.status}})
}

// catalogErrors are the status and Java exception name of each kind of
// the catalog's refusals.
var catalogErrors = map[catalog.Kind]struct {
	status int
	typ    string
}{
	catalog.Invalid:            {http.StatusBadRequest, typeBadRequest},
	catalog.IllegalArgument:    {http.StatusBadRequest, typeIllegalArgument},
	catalog.NoSuchNamespace:    {http.StatusNotFound, typeNoSuchNamespace},
	catalog.NoSuchTable:        {http.StatusNotFound, typeNoSuchTable},
	catalog.NoSuchView:         {http.StatusNotFound, typeNoSuchView},
	catalog.NoSuchBranch:       {http.StatusNotFound, typeNoSuchWarehouse},
	catalog.AlreadyExists:      {http.StatusConflict, typeAlreadyExists},
	catalog.CommitFailed:       {http.StatusConflict, typeCommitFailed},
	catalog.StorageFailed:      {http.StatusInternalServerError, typeInternalServerError},
	catalog.CommitStateUnknown: {http.StatusInternalServerError, typeCommitStateUnknown},
	catalog.NamespaceNotEmpty:  {http.StatusConflict, typeNamespaceNotEmpty},
	catalog.Unprocessable:      {http.StatusUnprocessableEntity, typeUnprocessable},
	catalog.NoSuchFile:         {http.StatusNotFound, typeNotFound},
}

// fromCatalog is the error model of a catalog refusal: its message as
// is, under the status and exception name of its kind.
func fromCatalog(ce *catalog.Error) *apiError {
	m, ok := catalogErrors[ce.Kind]
	if !ok {
		return &apiError{status: http.StatusInternalServerError, typ: typeInternalServerError, msg: "internal error", cause: ce}
	}
	return &apiError{status: m.status, typ: m.typ, msg: ce.Msg, cause: ce.Cause}
}

// errorStatus is the status err is answered with, for an error that is
// itself an apiError or a catalog refusal; ok is false for any other.
func errorStatus(err error) (status int, ok bool) {
	switch e := err.(type) {
	case *apiError:
		return e.status, true
	case *catalog.Error:
		return fromCatalog(e).status, true
	}
	return 0, false
}
