package nessieclient

import (
	"fmt"
	"strings"
)

// Error is a NessieError: a request the server refused.
type Error struct {
	Status    int    `json:"status"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
	ErrorCode string `json:"errorCode"`
	// Details are the conflicts of a REFERENCE_CONFLICT, when it has any.
	Details *struct {
		Conflicts []Conflict `json:"conflicts"`
	} `json:"errorDetails,omitempty"`
	// Body is the error object exactly as the server sent it.
	Body []byte `json:"-"`
}

// Error is one line: the server's message, its error code, and for
// conflicts each conflicting key with its conflict type.
func (e *Error) Error() string {
	msg := strings.Join(strings.Fields(e.Message), " ")
	if msg == "" {
		msg = fmt.Sprintf("HTTP %d %s", e.Status, e.Reason)
	}
	code := e.ErrorCode
	// UNKNOWN is Nessie's code for errors without one (a 401 among them):
	// the HTTP status says more.
	if code == "" || code == "UNKNOWN" {
		code = fmt.Sprintf("HTTP %d", e.Status)
	}
	s := msg + " (" + code + ")"
	if cs := e.Conflicts(); len(cs) > 0 {
		parts := make([]string, len(cs))
		for i, c := range cs {
			key := "(no key)"
			if c.Key != nil {
				key = c.Key.String()
			}
			parts[i] = key + " " + c.ConflictType
		}
		s += "; conflicts: " + strings.Join(parts, ", ")
	}
	return s
}

// Conflicts are the conflicts the error reports, if any.
func (e *Error) Conflicts() []Conflict {
	if e.Details == nil {
		return nil
	}
	return e.Details.Conflicts
}

// Error codes callers branch on.
const (
	CodeReferenceNotFound = "REFERENCE_NOT_FOUND"
	CodeReferenceConflict = "REFERENCE_CONFLICT"
	CodeContentNotFound   = "CONTENT_NOT_FOUND"
)
