//go:build linux

package icebergtable

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// BenchmarkWriteLocalFile is the kernel's part of a table commit alone:
// writeLocalFile (create with O_EXCL, write, fsync, close, and the fsync
// of the directory: always, or by-fs where the file system needs it) of a
// 24 KiB metadata file, what a property commit on a small
// table writes, by 32 goroutines into 32 directories as 32 committing
// clients do. cpu-us/op and sys-us/op are the process's CPU per file
// (getrusage): compare them with BenchmarkTableCommit's, which pays the
// same system calls plus everything else a commit does.
//
// freed=N first creates and deletes N files in a sibling directory, as the
// run before it (or any other process) leaves behind: on ext4 without a
// journal the inode allocator skips every inode freed in the last 5
// seconds (300 more while its inode table block is dirty) on every create,
// scanning the directory's block group from its start, so each create then
// costs time proportional to the freed inodes before the first usable one.
// Set TMPDIR to measure another file system.
func BenchmarkWriteLocalFile(b *testing.B) {
	data := make([]byte, 24<<10)
	for i := range data {
		data[i] = byte('a' + i%26)
	}
	for _, tc := range []struct {
		freed int
		sync  string
	}{{0, "by-fs"}, {0, "always"}, {3200, "by-fs"}} {
		freed := tc.freed
		var syncs *dirSync // nil: the directory is always synced
		if tc.sync == "by-fs" {
			syncs = newDirSync()
		}
		b.Run(fmt.Sprintf("freed=%d/dirsync=%s", freed, tc.sync), func(b *testing.B) {
			const writers = 32
			root := b.TempDir()
			if freed > 0 {
				churn := filepath.Join(root, "churn")
				if err := os.Mkdir(churn, 0o755); err != nil {
					b.Fatal(err)
				}
				for i := range freed {
					name := filepath.Join(churn, fmt.Sprintf("%05d", i))
					if err := os.WriteFile(name, data[:100], 0o644); err != nil {
						b.Fatal(err)
					}
				}
				if err := os.RemoveAll(churn); err != nil {
					b.Fatal(err)
				}
			}
			dirs := make([]string, writers)
			for w := range dirs {
				dirs[w] = filepath.Join(root, fmt.Sprintf("t%02d", w), "metadata")
				if err := os.MkdirAll(dirs[w], 0o755); err != nil {
					b.Fatal(err)
				}
			}
			var (
				next atomic.Int64
				wg   sync.WaitGroup
				errs = make([]error, writers)
			)
			cpu0, sys0 := rusage()
			b.ResetTimer()
			for w := range writers {
				wg.Go(func() {
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						name := filepath.Join(dirs[w], fmt.Sprintf("%05d-bench.metadata.json", i))
						if err := writeLocalFile(name, data, syncs, nil); err != nil {
							errs[w] = err
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			cpu1, sys1 := rusage()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((cpu1-cpu0).Microseconds())/float64(b.N), "cpu-us/op")
			b.ReportMetric(float64((sys1-sys0).Microseconds())/float64(b.N), "sys-us/op")
		})
	}
}

// rusage is this process's CPU time so far and its kernel part.
func rusage() (cpu, sys time.Duration) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), time.Duration(ru.Stime.Nano())
}
