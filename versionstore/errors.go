package versionstore

import (
	"errors"
	"fmt"
	"strings"

	"github.com/floe-catalog/floe/versionstore/backend"
)

// Errors callers branch on; returned errors wrap them with the names and
// hashes involved.
var (
	// ErrInvalid reports a malformed request: bad names, keys, hashes,
	// duplicate keys, missing fields.
	ErrInvalid = errors.New("invalid request")
	// ErrReferenceNotFound reports an unknown branch or tag.
	ErrReferenceNotFound = errors.New("reference not found")
	// ErrReferenceExists reports creating a reference whose name is taken.
	ErrReferenceExists = errors.New("reference already exists")
	// ErrCommitNotFound reports an unknown or ambiguous commit hash.
	ErrCommitNotFound = errors.New("commit not found")
	// ErrContentNotFound reports a key absent at the requested commit.
	ErrContentNotFound = errors.New("content not found")
	// ErrReferenceConflict reports a reference that did not hold the
	// expected hash, or keys that changed concurrently; a
	// *ConflictError carries the details.
	ErrReferenceConflict = errors.New("reference conflict")
	// ErrNotABranch reports a write aimed at a tag or a detached hash.
	ErrNotABranch = errors.New("not a branch")
	// ErrForbidden reports an operation the store never allows, such as
	// deleting the default branch.
	ErrForbidden = errors.New("operation not allowed")
	// ErrClosed reports use of a closed store.
	ErrClosed = errors.New("version store closed")
	// ErrUnavailable reports that the backend's storage could not be
	// reached (a shared database down or restarting); try again later.
	ErrUnavailable = backend.ErrUnavailable
	// ErrOutcomeUnknown reports a write whose outcome the backend could
	// not confirm (it wraps ErrUnavailable): it may have happened. An
	// ErrUnavailable without it means nothing was written.
	ErrOutcomeUnknown = backend.ErrOutcomeUnknown
)

// ConflictType classifies a conflict, with Nessie's names.
type ConflictType string

// The conflict types, as Nessie names them.
const (
	ConflictUnknown           ConflictType = "UNKNOWN"
	ConflictKeyExists         ConflictType = "KEY_EXISTS"
	ConflictKeyDoesNotExist   ConflictType = "KEY_DOES_NOT_EXIST"
	ConflictPayloadDiffers    ConflictType = "PAYLOAD_DIFFERS"
	ConflictContentIDDiffers  ConflictType = "CONTENT_ID_DIFFERS"
	ConflictValueDiffers      ConflictType = "VALUE_DIFFERS"
	ConflictNamespaceAbsent   ConflictType = "NAMESPACE_ABSENT"
	ConflictNotANamespace     ConflictType = "NOT_A_NAMESPACE"
	ConflictNamespaceNotEmpty ConflictType = "NAMESPACE_NOT_EMPTY"
	ConflictUnexpectedHash    ConflictType = "UNEXPECTED_HASH"
)

// Conflict is one reason a commit, merge or transplant cannot apply.
type Conflict struct {
	Type    ConflictType
	Key     ContentKey // nil for conflicts about the reference itself
	Message string
}

// ConflictError reports that a write could not be applied. It wraps
// ErrReferenceConflict.
type ConflictError struct {
	Ref       string
	Conflicts []Conflict
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s on %q", ErrReferenceConflict, e.Ref)
	for i, c := range e.Conflicts {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(c.Message)
	}
	return b.String()
}

func (e *ConflictError) Unwrap() error { return ErrReferenceConflict }

func unexpectedHash(ref string, expected, actual Hash) *ConflictError {
	return &ConflictError{Ref: ref, Conflicts: []Conflict{{
		Type:    ConflictUnexpectedHash,
		Message: fmt.Sprintf("expected hash %s but %q is at %s", expected, ref, actual),
	}}}
}
