package mergeengine

import (
	"context"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/tablemerge"
)

// TestIsFault: what storage or the caller did is a fault; what a table's
// files say (missing, outside the warehouse, a decision of tablemerge) is
// not, even when it also carries a system call's error.
func TestIsFault(t *testing.T) {
	create := func(errno syscall.Errno) error {
		return fmt.Errorf("write metadata file f: %w", &fs.PathError{Op: "create", Path: "/w/t/metadata/x", Err: errno})
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"permission denied", create(syscall.EACCES), true},
		{"operation not permitted", create(syscall.EPERM), true},
		{"no space left", create(syscall.ENOSPC), true},
		{"read-only file system", create(syscall.EROFS), true},
		{"a file where a directory must be", create(syscall.ENOTDIR), true},
		{"i/o error", create(syscall.EIO), true},
		{"cancelled", fmt.Errorf("classify: %w", context.Canceled), true},
		{"timed out", fmt.Errorf("read: %w", context.DeadlineExceeded), true},
		{"missing file", create(syscall.ENOENT), false},
		{"outside the warehouse", fmt.Errorf("read metadata file f: %w", icebergtable.ErrOutsideWarehouse), false},
		{"too large", fmt.Errorf("read metadata file f: %w", icebergtable.ErrTooLarge), false},
		{"row conflict", fmt.Errorf("%w: %w", tablemerge.ErrRowConflict, syscall.EIO), false},
		{"not replayable", tablemerge.ErrNotReplayable, false},
		{"corrupt file", fmt.Errorf("parse metadata file f: unexpected end of JSON input"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := isFault(c.err); got != c.want {
				t.Fatalf("isFault(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}
