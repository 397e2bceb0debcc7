package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestWriteTables(t *testing.T) {
	var r Results
	for i, v := range []float64{100, 300, 200} { // median 200
		r.Add(Sample{Step: "property commits", Clients: 8, System: "floe", PerSecond: v,
			P50: time.Duration(i+1) * time.Millisecond, P99: 10 * time.Millisecond, ServerCPU: 400 * time.Microsecond})
	}
	for _, v := range []float64{40, 50} { // median 45
		r.Add(Sample{Step: "property commits", Clients: 8, System: "nessie", PerSecond: v,
			P50: 20 * time.Millisecond, P99: 90 * time.Millisecond, ServerCPU: 12 * time.Millisecond, StoreCPU: 1500 * time.Microsecond, HasStore: true})
	}
	r.Add(Sample{Step: "appends", Clients: 32, System: "floe", PerSecond: 80, Append: &AppendResult{
		Stats: Stats{Ops: 10}, FirstAttempt: 4, Retries: 9, Failed: 2, Errors: 0, Loss: LossReport{ChainComplete: true, Rebased: 3}}})
	r.Add(Sample{Step: "appends", Clients: 32, System: "nessie", PerSecond: 5, Append: &AppendResult{
		Stats: Stats{Ops: 6}, FirstAttempt: 3, Retries: 20, Failed: 1, Errors: 1, Loss: LossReport{SeqShortfall: 1, SameParent: 1}}})
	var out strings.Builder
	if err := r.WriteTables(&out, "floe"); err != nil {
		t.Fatal(err)
	}
	want := `| workload | clients | system | ops/s | p50 ms | p99 ms | floe/system | server CPU ms/op | store CPU ms/op | runs |
|---|---:|---|---:|---:|---:|---:|---:|---:|---:|
| property commits | 8 | floe | 200 | 2.00 | 10.0 | - | 0.40 | - | 3 |
| property commits | 8 | nessie | 45 | 20.0 | 90.0 | 4.44 | 12.0 | 1.50 | 2 |
| appends | 32 | floe | 80 | 0.00 | 0.00 | - | 0.00 | - | 1 |
| appends | 32 | nessie | 5 | 0.00 | 0.00 | 16.00 | 0.00 | - | 1 |

Hot-table appends, summed over the runs:

| clients | system | acknowledged | first-attempt successes | retries | failed after 4 retries | other errors | rebased by the server | lost acknowledged | checked by |
|---:|---|---:|---:|---:|---:|---:|---:|---:|---|
| 32 | floe | 10 | 4 (33%) | 9 | 2 | 0 | 3 | 0 | chain, sequence, parents |
| 32 | nessie | 6 | 3 (38%) | 20 | 1 | 1 | 0 | 1 | sequence, parents (chain not listed) |
`
	if got := out.String(); got != want {
		t.Errorf("tables:\n%s\nwant:\n%s", got, want)
	}
}

func TestParseStat(t *testing.T) {
	// A command name with spaces and a parenthesis, as /proc allows.
	line := "4242 (java (main) x) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 75 0 0 20 0 40 0 100 0 0\n"
	got, err := parseStat(line)
	if err != nil {
		t.Fatal(err)
	}
	if want := (cpuTimes{user: 2500 * time.Millisecond, system: 750 * time.Millisecond}); got != want || got.total() != 3250*time.Millisecond {
		t.Errorf("parseStat = %+v, want %+v (utime 250, stime 75 ticks)", got, want)
	}
	if _, err := parseStat("4242 (java) S 1"); err == nil {
		t.Error("parseStat of a short line: want an error")
	}
}

func TestMedian(t *testing.T) {
	if got := median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median of 3 = %v, want 2", got)
	}
	if got := median([]time.Duration{4, 1, 3, 2}); got != 2 {
		t.Errorf("median of 4 = %v, want 2 (the mean of 2 and 3, truncated)", got)
	}
	if got := median([]int64(nil)); got != 0 {
		t.Errorf("median of none = %v, want 0", got)
	}
}

func TestPeerFlag(t *testing.T) {
	var p peerFlags
	if err := p.Set("name=nessie,url=http://127.0.0.1:1/iceberg,warehouse=w,pid=12,store-pid=13"); err != nil {
		t.Fatal(err)
	}
	want := Peer{Name: "nessie", URL: "http://127.0.0.1:1/iceberg", Warehouse: "w", PID: 12, StorePID: 13}
	if len(p) != 1 || p[0] != want {
		t.Errorf("peers = %+v, want [%+v]", p, want)
	}
	for _, bad := range []string{"url=http://x", "name=a,url=http://x,pid=x", "name=a,url=http://x,colour=red", "name"} {
		if err := p.Set(bad); err == nil {
			t.Errorf("Set(%q): want an error", bad)
		}
	}
}

// TestSelectSteps: -workloads keeps the chosen kinds in their order and
// refuses a kind that does not exist.
func TestSelectSteps(t *testing.T) {
	all, err := selectSteps("")
	if err != nil || len(all) != len(steps()) {
		t.Fatalf("all: %d steps, %v", len(all), err)
	}
	got, err := selectSteps("load,props")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, st := range got {
		kinds = append(kinds, fmt.Sprintf("%s/%d", st.kind, st.clients))
	}
	if want := "props/1 props/8 props/32 load/1 load/8"; strings.Join(kinds, " ") != want {
		t.Errorf("selected %v, want %s", kinds, want)
	}
	if _, err := selectSteps("props,nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("an unknown workload: %v", err)
	}
}
