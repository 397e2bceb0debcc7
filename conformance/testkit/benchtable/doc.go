// Command benchtable turns `go test -bench` output into one aligned table.
//
// A row per benchmark result with ns/op, every custom metric the benchmarks
// report (commits/s, MB/s, ...), B/op and allocs/op. It reads the files
// named as arguments, or standard input. `make bench` uses it.
//
// It only reformats: no statistics, no comparison (benchstat does those).
//
// It imports only the standard library.
package main
