package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go supports (sysconf(_SC_CLK_TCK)).
const clockTicks = 100

// cpuTimes is the CPU time a process has used, in user space and in the
// kernel on its behalf. The kernel's share of a catalog commit (creating,
// writing and syncing files, the network) varies several-fold between
// runs on a shared machine; the user part moves with the code.
type cpuTimes struct{ user, system time.Duration }

func (c cpuTimes) total() time.Duration { return c.user + c.system }

func (c cpuTimes) sub(d cpuTimes) cpuTimes { return cpuTimes{c.user - d.user, c.system - d.system} }

// CPUTime reads the user and system CPU time the process pid (all its
// threads) has used, from /proc/<pid>/stat.
func CPUTime(pid int) (cpuTimes, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return cpuTimes{}, fmt.Errorf("reading the CPU time of process %d: %w", pid, err)
	}
	return parseStat(string(b))
}

// parseStat reads utime and stime (fields 14 and 15) of a stat line. The
// command name (field 2) is in parentheses and may hold spaces, so the
// fields are counted after its closing parenthesis.
func parseStat(stat string) (cpuTimes, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return cpuTimes{}, fmt.Errorf("malformed stat line %.80q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return cpuTimes{}, fmt.Errorf("malformed stat line %.80q", stat)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return cpuTimes{}, fmt.Errorf("malformed stat line %.80q", stat)
	}
	return cpuTimes{user: time.Duration(utime) * time.Second / clockTicks, system: time.Duration(stime) * time.Second / clockTicks}, nil
}
