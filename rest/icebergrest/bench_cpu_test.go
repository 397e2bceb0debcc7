//go:build unix

package icebergrest_test

import (
	"syscall"
	"time"
)

func init() {
	processCPU = func() time.Duration { return rusageCPU(true) }
	processSysCPU = func() time.Duration { return rusageCPU(false) }
}

// rusageCPU is the CPU time this process has used (user and system, or
// system only): the server and its clients, which share the process in
// the benchmarks.
func rusageCPU(user bool) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	if !user {
		return time.Duration(ru.Stime.Nano())
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
