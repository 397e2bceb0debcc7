package unwritable

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// The ioctls that read and set a Linux inode's flags (linux/fs.h), and
// the flag that makes a directory refuse new entries, even to root.
const (
	fsIocGetFlags = 0x80086601
	fsIocSetFlags = 0x40086602
	fsImmutableFl = 0x10
)

// Make makes every directory under dir refuse new files until the
// returned restore is called (it is also called when the test ends). An
// unprivileged test takes the write permission away; root ignores
// permissions, so as root the directories are marked immutable instead,
// which root's writes obey too. The test is skipped, with the reason, if
// neither holds (root on a file system without the flag).
func Make(t testing.TB, dir string) (restore func()) {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil {
		t.Fatalf("unwritable: list %s: %v", dir, err)
	}
	set := chmod
	if os.Geteuid() == 0 {
		set = immutable
	}
	var done []string
	restore = func() {
		for _, d := range done {
			if err := set(d, false); err != nil {
				t.Errorf("unwritable: make %s writable again: %v", d, err)
			}
		}
		done = nil
	}
	t.Cleanup(restore)
	for _, d := range dirs {
		if err := set(d, true); err != nil {
			restore()
			t.Skipf("unwritable: cannot make %s refuse new files (%v); as root that needs a file system with the immutable flag", d, err)
		}
		done = append(done, d)
	}
	probe := filepath.Join(dir, "unwritable-probe")
	if f, err := os.Create(probe); err == nil {
		_ = f.Close()
		_ = os.Remove(probe)
		restore()
		t.Skipf("unwritable: %s still takes new files", dir)
	}
	return restore
}

func chmod(dir string, on bool) error {
	mode := os.FileMode(0o755)
	if on {
		mode = 0o555
	}
	return os.Chmod(dir, mode)
}

// immutable sets or clears dir's immutable flag.
func immutable(dir string, on bool) error {
	if runtime.GOOS != "linux" {
		return errors.New("the flag is set through Linux's ioctls only")
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var flags int32
	if err := ioctl(fd, fsIocGetFlags, &flags); err != nil {
		return fmt.Errorf("read the flags of %s: %w", dir, err)
	}
	if on {
		flags |= fsImmutableFl
	} else {
		flags &^= fsImmutableFl
	}
	if err := ioctl(fd, fsIocSetFlags, &flags); err != nil {
		return fmt.Errorf("set the flags of %s: %w", dir, err)
	}
	return nil
}

func ioctl(fd int, req uintptr, flags *int32) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(unsafe.Pointer(flags))); errno != 0 {
		return errno
	}
	return nil
}
