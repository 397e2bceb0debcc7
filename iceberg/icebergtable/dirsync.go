package icebergtable

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// dirSync decides whether a new local file's directory must be fsynced
// after the file itself for the file's entry to survive a crash.
//
// POSIX asks for it, and so it is done everywhere but on ext4, where the
// file's own fsync already makes its entry durable: without a journal,
// ext4's fsync of a newly created inode writes its parent directories'
// blocks and inodes too (ext4_sync_parent, since Linux 2.6.35, for every
// new ancestor); with a journal, it commits the transaction that holds the
// create, and with it the directory entry. There the directory fsync only
// costs another device flush: on this project's machine a seventh of a
// whole Iceberg commit's CPU (issue 14). The file system is read from
// /proc/self/mountinfo by the device of the file just written, so an ext2
// or ext3 mount (the same on-disk magic, other fsync code), overlayfs,
// NFS, or anything unknown gets the directory fsync.
//
// Answers are kept per device for dirSyncRecheck, so a device that comes
// back with another file system is seen again.
type dirSync struct {
	mountinfo string // "/proc/self/mountinfo"; tests point it elsewhere
	mu        sync.Mutex
	byDev     map[uint64]dirSyncAnswer
}

type dirSyncAnswer struct {
	needed bool
	until  time.Time
}

const dirSyncRecheck = time.Minute

func newDirSync() *dirSync {
	return &dirSync{mountinfo: "/proc/self/mountinfo", byDev: map[uint64]dirSyncAnswer{}}
}

// needed says whether the directory of the new file open as fd must be
// fsynced for the file's entry to be durable. When in doubt, it must.
func (d *dirSync) needed(fd int) bool {
	if d == nil {
		return true
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return true
	}
	dev := uint64(st.Dev)
	now := time.Now()
	d.mu.Lock()
	a, ok := d.byDev[dev]
	d.mu.Unlock()
	if ok && now.Before(a.until) {
		return a.needed
	}
	fsType, err := d.fileSystemOf(dev)
	a = dirSyncAnswer{needed: err != nil || fsType != "ext4", until: now.Add(dirSyncRecheck)}
	d.mu.Lock()
	d.byDev[dev] = a
	d.mu.Unlock()
	return a.needed
}

// fileSystemOf is the file system type mountinfo gives the device dev.
func (d *dirSync) fileSystemOf(dev uint64) (string, error) {
	b, err := os.ReadFile(d.mountinfo)
	if err != nil {
		return "", err
	}
	return mountedFileSystem(b, devMajor(dev), devMinor(dev))
}

// mountedFileSystem finds the file system type of device major:minor in
// a mountinfo table (proc_pid_mountinfo(5)): "36 35 98:0 /mnt1 /mnt2 rw
// master:1 - ext4 /dev/root rw" is device 98:0 holding ext4. Mounts of
// one device share its file system, so the first match answers.
func mountedFileSystem(mountinfo []byte, major, minor uint32) (string, error) {
	want := fmt.Sprintf("%d:%d", major, minor)
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 || fields[2] != want {
			continue
		}
		for i := 6; i+1 < len(fields); i++ {
			if fields[i] == "-" {
				return fields[i+1], nil
			}
		}
		return "", fmt.Errorf("mountinfo: no file system type for device %s", want)
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("mountinfo: %w", err)
	}
	return "", fmt.Errorf("mountinfo: no mount of device %s", want)
}

// devMajor and devMinor split a Linux dev_t as glibc's major(3) and
// minor(3) do.
func devMajor(dev uint64) uint32 {
	return uint32((dev>>8)&0xfff) | uint32((dev>>32)&^0xfff)
}

func devMinor(dev uint64) uint32 {
	return uint32(dev&0xff) | uint32((dev>>12)&^0xff)
}
