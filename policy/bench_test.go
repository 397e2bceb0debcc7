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

// benchEngine starts an engine on the default bundle and checks that it
// runs on the evaluator the benchmark is named for.
func benchEngine(b *testing.B, cacheSize int, evaluator string) *Engine {
	e, err := New(b.Context(), Options{DecisionCacheSize: cacheSize, Evaluator: evaluator})
	if err != nil {
		b.Fatal(err)
	}
	want := evaluatorPlan
	if evaluator == EvaluatorTopdown {
		want = evaluatorTopdown
	}
	if got := e.active.Load().evaluator(); got != want {
		b.Fatalf("engine runs on %s, want %s (%s)", got, want, e.active.Load().topdownWhy)
	}
	return e
}

// BenchmarkDecide measures Decide with the default bundle and reports the
// median and 99th percentile latency of single decisions in microseconds.
func BenchmarkDecide(b *testing.B) {
	// cache=off is the cost of evaluating the default bundle, with the
	// compiled plan (the default) and with OPA's topdown; cache=on is what
	// Decide costs when the question was asked before, as commits to one
	// branch keep asking it.
	for _, bc := range []struct {
		name      string
		size      int
		evaluator string
	}{
		{"cache=off/evaluator=plan", -1, EvaluatorAuto},
		{"cache=off/evaluator=topdown", -1, EvaluatorTopdown},
		{"cache=on", 0, EvaluatorAuto},
	} {
		b.Run(bc.name, func(b *testing.B) {
			e := benchEngine(b, bc.size, bc.evaluator)
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
// latency percentiles. Between decisions the CPU's caches go cold, and on
// a virtual machine the vCPU may be descheduled: control=spin times a
// fixed loop of arithmetic (about 10 µs) under the same pacing, the floor
// the machine itself puts under every percentile.
func BenchmarkDecidePaced(b *testing.B) {
	for _, bc := range []struct {
		name string
		size int
	}{{"cache=off", -1}, {"cache=on", 0}, {"control=spin", 0}} {
		for _, rate := range []int{1000, 5000} {
			b.Run(fmt.Sprintf("%s/rate=%d", bc.name, rate), func(b *testing.B) {
				e := benchEngine(b, bc.size, EvaluatorAuto)
				defer e.Close()
				decide := func(in Input) error {
					_, err := e.Decide(b.Context(), in)
					return err
				}
				if bc.name == "control=spin" {
					decide = func(Input) error {
						spin(7000)
						return nil
					}
				}
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
					if err := decide(inputs[i%len(inputs)]); err != nil {
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

// spinSink keeps spin's loop from being optimized away.
var spinSink uint64

// spin does n steps of a linear congruential generator: work that touches
// no memory, so its time varies only with the machine.
func spin(n int) {
	x := uint64(1)
	for range n {
		x = x*6364136223846793005 + 1442695040888963407
	}
	spinSink += x
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
