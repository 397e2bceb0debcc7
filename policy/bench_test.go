package policy

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/rego"
)

// benchInputs is a representative mix: a read, a commit on a user branch,
// and a three-table merge into main.
func benchInputs() []Input {
	return []Input{
		op(principal("alice", "analysts"), ActionRead, branchRef("main")),
		withContents(op(principal("alice", "analysts"), ActionCommit, branchRef("users/alice/x")), []string{"sales", "orders"}),
		mergeOp(principal("pat", "publishers", "finance"), ActionMerge, "etl/daily", "main",
			[]string{"sales", "orders"}, []string{"sales", "customers"}, []string{"finance", "ledger"}),
	}
}

// BenchmarkDecide measures Decide with the default bundle and reports the
// 99th percentile latency of single decisions in microseconds.
func BenchmarkDecide(b *testing.B) {
	// cache=off is the cost of evaluating the default bundle; cache=on is
	// what Decide costs when the question was asked before, as commits to
	// one branch keep asking it.
	for _, bc := range []struct {
		name string
		size int
	}{{"cache=off", -1}, {"cache=on", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			e, err := New(b.Context(), Options{DecisionCacheSize: bc.size})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			inputs := benchInputs()
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				start := time.Now()
				if _, err := e.Decide(b.Context(), inputs[i%len(inputs)]); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkDecidePaced asks one decision every 1/rate seconds instead of
// back to back, as a server does between requests, and reports the
// latency percentiles. Between decisions the CPU's caches go cold, which
// OPA's pointer-heavy evaluation feels.
func BenchmarkDecidePaced(b *testing.B) {
	for _, bc := range []struct {
		name string
		size int
	}{{"cache=off", -1}, {"cache=on", 0}} {
		for _, rate := range []int{1000, 5000} {
			b.Run(fmt.Sprintf("%s/rate=%d", bc.name, rate), func(b *testing.B) {
				e, err := New(b.Context(), Options{DecisionCacheSize: bc.size})
				if err != nil {
					b.Fatal(err)
				}
				defer e.Close()
				inputs := benchInputs()
				interval := time.Second / time.Duration(rate)
				lat := make([]time.Duration, 0, b.N)
				next := time.Now()
				for i := 0; b.Loop(); i++ {
					// Sleep most of the gap, then spin, so wake-up jitter
					// does not skip slots.
					if d := time.Until(next); d > 200*time.Microsecond {
						time.Sleep(d - 100*time.Microsecond)
					}
					for time.Now().Before(next) {
					}
					start := time.Now()
					if _, err := e.Decide(b.Context(), inputs[i%len(inputs)]); err != nil {
						b.Fatal(err)
					}
					lat = append(lat, time.Since(start))
					next = next.Add(interval)
				}
				reportPercentiles(b, lat)
			})
		}
	}
}

// reportPercentiles reports the median and 99th percentile of lat, in
// microseconds.
func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-us")
}

// BenchmarkInputConversion compares the hand-built input value with OPA's
// generic conversion (rego.EvalInput), for the same prepared query.
func BenchmarkInputConversion(b *testing.B) {
	e, err := New(b.Context(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	pq := e.active.Load().query
	inputs := benchInputs()
	b.Run("ast", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			in := &inputs[i%len(inputs)]
			if _, err := pq.Eval(b.Context(), rego.EvalParsedInput(in.astValue())); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("evalinput", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, err := pq.Eval(b.Context(), rego.EvalInput(inputs[i%len(inputs)])); err != nil {
				b.Fatal(err)
			}
		}
	})
}
