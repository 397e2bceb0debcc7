package main

import (
	"fmt"
	"io"
	"path"
	"strings"
)

// Columns that always come in this place when present; custom metrics go
// between ns/op and B/op in the order they first appear.
const (
	unitTime   = "ns/op"
	unitBytes  = "B/op"
	unitAllocs = "allocs/op"
)

func columns(results []result) []string {
	seen := map[string]bool{}
	var custom []string
	has := map[string]bool{}
	for _, r := range results {
		for _, u := range r.units {
			has[u] = true
			switch u {
			case unitTime, unitBytes, unitAllocs:
				continue
			}
			if !seen[u] {
				seen[u] = true
				custom = append(custom, u)
			}
		}
	}
	var cols []string
	if has[unitTime] {
		cols = append(cols, unitTime)
	}
	cols = append(cols, custom...)
	for _, u := range []string{unitBytes, unitAllocs} {
		if has[u] {
			cols = append(cols, u)
		}
	}
	return cols
}

// writeTable prints one row per result: the benchmark name (prefixed by the
// package's last element when results come from several packages), left
// aligned, then the metric columns right aligned. Missing values print "-".
func writeTable(w io.Writer, results []result) error {
	pkgs := map[string]bool{}
	for _, r := range results {
		pkgs[r.pkg] = true
	}
	cols := columns(results)
	header := append([]string{"benchmark"}, cols...)
	rows := [][]string{header}
	for _, r := range results {
		name := strings.TrimPrefix(r.name, "Benchmark")
		if len(pkgs) > 1 && r.pkg != "" {
			name = path.Base(r.pkg) + "." + name
		}
		row := []string{name}
		for _, c := range cols {
			v, ok := r.metrics[c]
			if !ok {
				v = "-"
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}

	widths := make([]int, len(header))
	for _, row := range rows {
		for i, cell := range row {
			widths[i] = max(widths[i], len(cell))
		}
	}
	var b strings.Builder
	for n, row := range rows {
		for i, cell := range row {
			if i == 0 {
				fmt.Fprintf(&b, "%-*s", widths[i], cell)
			} else {
				fmt.Fprintf(&b, "  %*s", widths[i], cell)
			}
		}
		b.WriteByte('\n')
		if n == 0 {
			total := len(header)*2 - 2
			for _, wd := range widths {
				total += wd
			}
			b.WriteString(strings.Repeat("-", total) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
