package mergeengine

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"

	"gocloud.dev/gcerrors"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/tablemerge"
	"github.com/floe-catalog/floe/versionstore"
)

// FaultError is a merge or transplant that failed because a table's files
// could not be read or written: the warehouse refused a write (permission
// denied, no space left, a read-only or broken file system), the object
// store did not answer, or the caller's context ended. It says nothing
// about the data, so it is not a refusal: nothing was written (the files
// of the attempt are removed, best effort), and the same merge may
// succeed once the storage recovers. The APIs answer it with a 5xx; the
// merge queue retries it.
type FaultError struct {
	Op     string // "merge" or "transplant"
	Target string
	Key    versionstore.ContentKey // the table whose files failed
	Err    error
}

func (e *FaultError) Error() string {
	return fmt.Sprintf("%s into %s: the files of %s could not be read or written, nothing was written: %v", e.Op, e.Target, e.Key, e.Err)
}

func (e *FaultError) Unwrap() error { return e.Err }

// isFault tells a storage fault from a fact about the table among the
// errors of deciding one table (resolveTable). A fact (a file the
// table's metadata names is missing, outside the warehouses, not a
// regular file or too large; a file that does not parse) keeps the
// documented answer, a refusal with the reason: trying again cannot
// change it. A fault is the storage's or the caller's: only those are
// worth trying again.
func isFault(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, tablemerge.ErrNotAdditive), errors.Is(err, tablemerge.ErrAlreadyPublished),
		errors.Is(err, tablemerge.ErrUnsupported), errors.Is(err, tablemerge.ErrNotReplayable),
		errors.Is(err, tablemerge.ErrRowConflict), errors.Is(err, tablemerge.ErrStructure):
		return false // decisions about the data, whatever they wrap
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return true
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, icebergtable.ErrOutsideWarehouse),
		errors.Is(err, icebergtable.ErrNotRegularFile), errors.Is(err, icebergtable.ErrTooLarge):
		return false
	case errors.Is(err, fs.ErrPermission):
		return true
	}
	// Any other system call's error is the file system's (ENOSPC, EIO,
	// EROFS, EDQUOT, ENOTDIR where a directory must be); syscall.Errno
	// is also a net.Error, as are the object store's connection errors.
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	switch gcerrors.Code(err) {
	case gcerrors.PermissionDenied, gcerrors.ResourceExhausted, gcerrors.Internal,
		gcerrors.DeadlineExceeded, gcerrors.Canceled:
		return true
	}
	return false
}
