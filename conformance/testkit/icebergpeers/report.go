package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Sample is one system's result of one step in one run.
type Sample struct {
	Step      string // workload name, e.g. "property commits"
	Clients   int
	System    string
	PerSecond float64
	P50, P99  time.Duration
	ServerCPU time.Duration // server process CPU per op
	// ServerUserCPU is ServerCPU's user-space part, which the kernel's
	// noise (file creates and fsyncs on a shared disk) does not move.
	ServerUserCPU time.Duration
	StoreCPU      time.Duration // object store process CPU per op, if HasStore
	HasStore      bool
	Append        *AppendResult // hot appends only
}

type rowKey struct {
	step    string
	clients int
	system  string
}

// Results collects samples across runs, remembering the order in which
// steps and systems first appeared so the tables keep it.
type Results struct {
	samples map[rowKey][]Sample
	steps   []rowKey // step and clients only
	systems []string
}

// Add records s.
func (r *Results) Add(s Sample) {
	if r.samples == nil {
		r.samples = make(map[rowKey][]Sample)
	}
	k := rowKey{s.Step, s.Clients, s.System}
	step := rowKey{step: s.Step, clients: s.Clients}
	if !slices.Contains(r.steps, step) {
		r.steps = append(r.steps, step)
	}
	if !slices.Contains(r.systems, s.System) {
		r.systems = append(r.systems, s.System)
	}
	r.samples[k] = append(r.samples[k], s)
}

// median of xs (the mean of the middle two for an even count).
func median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

type summary struct {
	runs                 int
	perSecond            float64
	p50, p99             time.Duration
	serverCPU, storeCPU  time.Duration
	hasStore             bool
	acked, firstOK       int
	retries, failed, err int
	lost, rebased        int
	chainComplete        bool
	isAppend             bool
}

func summarize(ss []Sample) summary {
	var (
		sum                          = summary{runs: len(ss), chainComplete: true}
		ps                           []float64
		p50, p99, serverCPU, storeCP []time.Duration
	)
	for _, s := range ss {
		ps = append(ps, s.PerSecond)
		p50, p99 = append(p50, s.P50), append(p99, s.P99)
		serverCPU = append(serverCPU, s.ServerCPU)
		if s.HasStore {
			sum.hasStore = true
			storeCP = append(storeCP, s.StoreCPU)
		}
		if a := s.Append; a != nil {
			sum.isAppend = true
			sum.acked += a.Ops
			sum.firstOK += a.FirstAttempt
			sum.retries += a.Retries
			sum.failed += a.Failed
			sum.err += a.Errors
			sum.lost += a.Loss.Lost()
			sum.rebased += a.Loss.Rebased
			sum.chainComplete = sum.chainComplete && a.Loss.ChainComplete
		}
	}
	sum.perSecond, sum.p50, sum.p99 = median(ps), median(p50), median(p99)
	sum.serverCPU, sum.storeCPU = median(serverCPU), median(storeCP)
	return sum
}

// WriteTables writes the throughput table (every step) and the appends
// table (hot appends) in Markdown. ratioTo names the system the others
// are compared with (floe): its ops/s divided by theirs.
func (r *Results) WriteTables(w io.Writer, ratioTo string) error {
	var b strings.Builder
	b.WriteString("| workload | clients | system | ops/s | p50 ms | p99 ms | " + ratioTo + "/system | server CPU ms/op | store CPU ms/op | runs |\n")
	b.WriteString("|---|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, st := range r.steps {
		base, haveBase := r.samples[rowKey{st.step, st.clients, ratioTo}]
		for _, sys := range r.systems {
			ss, ok := r.samples[rowKey{st.step, st.clients, sys}]
			if !ok {
				continue
			}
			s := summarize(ss)
			ratio := "-"
			if haveBase && sys != ratioTo && s.perSecond > 0 {
				ratio = fmt.Sprintf("%.2f", summarize(base).perSecond/s.perSecond)
			}
			store := "-"
			if s.hasStore {
				store = ms(s.storeCPU)
			}
			fmt.Fprintf(&b, "| %s | %d | %s | %.0f | %s | %s | %s | %s | %s | %d |\n",
				st.step, st.clients, sys, s.perSecond, ms(s.p50), ms(s.p99), ratio, ms(s.serverCPU), store, s.runs)
		}
	}

	var appends strings.Builder
	for _, st := range r.steps {
		for _, sys := range r.systems {
			ss, ok := r.samples[rowKey{st.step, st.clients, sys}]
			if !ok {
				continue
			}
			s := summarize(ss)
			if !s.isAppend {
				continue
			}
			started := s.acked + s.failed + s.err
			pct := 0.0
			if started > 0 {
				pct = 100 * float64(s.firstOK) / float64(started)
			}
			check := "chain, sequence, parents"
			if !s.chainComplete {
				check = "sequence, parents (chain not listed)"
			}
			fmt.Fprintf(&appends, "| %d | %s | %d | %d (%.0f%%) | %d | %d | %d | %d | %d | %s |\n",
				st.clients, sys, s.acked, s.firstOK, pct, s.retries, s.failed, s.err, s.rebased, s.lost, check)
		}
	}
	if appends.Len() > 0 {
		b.WriteString("\nHot-table appends, summed over the runs:\n\n")
		b.WriteString("| clients | system | acknowledged | first-attempt successes | retries | failed after 4 retries | other errors | rebased by the server | lost acknowledged | checked by |\n")
		b.WriteString("|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
		b.WriteString(appends.String())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ms formats d in milliseconds with two or three significant decimals.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	if v < 10 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
