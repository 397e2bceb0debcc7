package catalog

import (
	"fmt"

	"github.com/floe-catalog/floe/versionstore"
)

// Kind is what a refusal of the catalog means to a client. The APIs map
// each kind onto their own error model (the Iceberg REST facade onto the
// Java exception names Iceberg's clients pick exceptions by); the message
// is the client's to read, worded as those clients expect.
type Kind int

const (
	// Invalid: the request is malformed or breaks a catalog rule
	// (BadRequestException).
	Invalid Kind = iota + 1
	// IllegalArgument: Iceberg's metadata rules refuse the change
	// (IllegalArgumentException).
	IllegalArgument
	// NoSuchNamespace, NoSuchTable, NoSuchView: what the request names
	// does not exist on the branch.
	NoSuchNamespace
	NoSuchTable
	NoSuchView
	// NoSuchBranch: the branch written to no longer exists.
	NoSuchBranch
	// AlreadyExists: a create names a key that holds something.
	AlreadyExists
	// CommitFailed: a requirement failed, or the table changed
	// concurrently more often than the retries absorb; the client may
	// refresh and retry (CommitFailedException).
	CommitFailed
	// StorageFailed: the warehouse's storage failed a read or write the
	// catalog relies on (a 500 with the storage's message).
	StorageFailed
	// CommitStateUnknown: the store could not report whether the commit
	// happened; the client must check before retrying.
	CommitStateUnknown
	// NamespaceNotEmpty: a namespace to drop still holds tables, views or
	// namespaces.
	NamespaceNotEmpty
	// Unprocessable: the request is well-formed but contradicts itself
	// (UnprocessableEntityException), e.g. a property both set and
	// removed.
	Unprocessable
	// NoSuchFile: the catalog names a metadata file storage no longer
	// has.
	NoSuchFile
)

// Error is a refusal of the catalog: its Kind, the client's message and,
// for logs only, the cause.
type Error struct {
	Kind  Kind
	Msg   string
	Cause error
}

func (e *Error) Error() string {
	if e.Cause != nil && e.Cause.Error() != e.Msg {
		return fmt.Sprintf("%s: %v", e.Msg, e.Cause)
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Cause }

func newError(kind Kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *Error {
	return newError(Invalid, format, args...)
}

func illegalArgument(format string, args ...any) *Error {
	return newError(IllegalArgument, format, args...)
}

func commitFailed(format string, args ...any) *Error {
	return newError(CommitFailed, format, args...)
}

func noSuchNamespace(ns []string) *Error {
	return newError(NoSuchNamespace, "Namespace does not exist: %s", dotted(ns))
}

func noSuchTable(id Identifier) *Error {
	return newError(NoSuchTable, "Table does not exist: %s", id)
}

func noSuchView(id Identifier) *Error {
	return newError(NoSuchView, "View does not exist: %s", id)
}

// internalError marks a failure of storage the catalog relies on.
func internalError(err error) error {
	return &Error{Kind: StorageFailed, Msg: err.Error(), Cause: err}
}

// namespaceClash is the refusal of creating a namespace over an existing
// key.
func namespaceClash(ns []string, existing versionstore.ContentType) error {
	switch existing {
	case versionstore.IcebergTable:
		return newError(AlreadyExists, "Cannot create namespace %s: a table with the same name exists", dotted(ns))
	case versionstore.IcebergView:
		return newError(AlreadyExists, "Cannot create namespace %s: a view with the same name exists", dotted(ns))
	}
	return newError(AlreadyExists, "Namespace already exists: %s", dotted(ns))
}
