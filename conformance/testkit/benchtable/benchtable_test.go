package main

import (
	"strings"
	"testing"
)

const sample = `goos: linux
goarch: amd64
pkg: github.com/floe-catalog/floe/versionstore
cpu: AMD EPYC 7B13
BenchmarkCommit/writers=1-8         	    2000	    512345 ns/op	      1952 commits/s	   40960 B/op	     311 allocs/op
BenchmarkCommit/writers=64-8        	   20000	     61234 ns/op	     16330 commits/s	   41984 B/op	     320 allocs/op
BenchmarkGetContent-8               	 1000000	      1043 ns/op	     256 B/op	       3 allocs/op
PASS
ok  	github.com/floe-catalog/floe/versionstore	12.345s
pkg: github.com/floe-catalog/floe/versionstore/pebblebackend
BenchmarkApply-8   	   5000	    234567 ns/op	  87.30 MB/s
--- FAIL: BenchmarkBroken
Benchmark with no numbers
PASS
`

func TestTable(t *testing.T) {
	var out strings.Builder
	if err := run(nil, strings.NewReader(sample), &out); err != nil {
		t.Fatal(err)
	}
	want := `benchmark                          ns/op  commits/s   MB/s   B/op  allocs/op
----------------------------------------------------------------------------
versionstore.Commit/writers=1-8   512345       1952      -  40960        311
versionstore.Commit/writers=64-8   61234      16330      -  41984        320
versionstore.GetContent-8           1043          -      -    256          3
pebblebackend.Apply-8             234567          -  87.30      -          -
`
	if got := out.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestNoResults(t *testing.T) {
	var out strings.Builder
	if err := run(nil, strings.NewReader("PASS\nok  \tx\t0.1s\n"), &out); err == nil {
		t.Error("want an error for input without benchmark results")
	}
}
