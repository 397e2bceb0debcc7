package main

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// result is one benchmark line: its package, name and value per unit.
type result struct {
	pkg     string
	name    string
	iters   int64
	metrics map[string]string // unit -> value as printed by go test
	units   []string          // units in the order they were printed
}

// parse reads `go test -bench` output. A result line is
//
//	BenchmarkName-8   1000   1234 ns/op   56.7 commits/s   512 B/op   8 allocs/op
//
// that is a name, an iteration count, then value/unit pairs. "pkg:" lines
// say which package the following results belong to; everything else is
// ignored.
func parse(r io.Reader) ([]result, error) {
	var (
		out []result
		pkg string
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if p, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if res, ok := parseResult(line); ok {
			res.pkg = pkg
			out = append(out, res)
		}
	}
	return out, sc.Err()
}

func parseResult(line string) (result, bool) {
	f := strings.Fields(line)
	if len(f) < 4 || len(f)%2 != 0 || !strings.HasPrefix(f[0], "Benchmark") {
		return result{}, false
	}
	iters, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return result{}, false
	}
	res := result{name: f[0], iters: iters, metrics: map[string]string{}}
	for i := 2; i < len(f); i += 2 {
		if _, err := strconv.ParseFloat(f[i], 64); err != nil {
			return result{}, false
		}
		unit := f[i+1]
		if _, dup := res.metrics[unit]; !dup {
			res.units = append(res.units, unit)
		}
		res.metrics[unit] = f[i]
	}
	return res, true
}
