//go:build unix

package icebergrest_test

import (
	"syscall"
	"time"
)

func init() { processCPU = rusageCPU }

// rusageCPU is the CPU time (user and system) this process has used: the
// server and its clients, which share the process in the benchmarks.
func rusageCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
