package benchhttp

import (
	"slices"
	"time"
)

// Stats are the timings of one workload run (a step).
type Stats struct {
	Ops     int
	Elapsed time.Duration   // wall time of the run
	Latency []time.Duration // one per op, sorted
}

// NewStats returns the Stats of ops that took lat (sorted in place) in
// elapsed wall time.
func NewStats(elapsed time.Duration, lat []time.Duration) Stats {
	slices.Sort(lat)
	return Stats{Ops: len(lat), Elapsed: elapsed, Latency: lat}
}

// PerSecond is Ops over Elapsed.
func (s Stats) PerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Ops) / s.Elapsed.Seconds()
}

// Percentile returns the p-th percentile (0 < p <= 100) latency, nearest
// rank.
func (s Stats) Percentile(p float64) time.Duration {
	if len(s.Latency) == 0 {
		return 0
	}
	i := int(float64(len(s.Latency))*p/100+0.5) - 1
	return s.Latency[min(max(i, 0), len(s.Latency)-1)]
}
