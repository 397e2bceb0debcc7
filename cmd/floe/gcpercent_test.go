package main

import (
	"runtime/debug"
	"testing"
)

// TestApplyGCPercent: the collector is relaxed only while a memory limit
// bounds the heap, and GOGC in the environment wins.
func TestApplyGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	if _, ok := applyGCPercent(false); ok {
		t.Fatal("GC percent raised without a memory limit")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent %d without a limit, want 100", got)
	}
	if pct, ok := applyGCPercent(true); !ok || pct != limitedGCPercent {
		t.Fatalf("with a limit: %d, %v", pct, ok)
	}
	if got := debug.SetGCPercent(100); got != limitedGCPercent {
		t.Fatalf("GC percent %d with a limit, want %d", got, limitedGCPercent)
	}
	t.Setenv("GOGC", "50")
	if _, ok := applyGCPercent(true); ok {
		t.Fatal("GOGC in the environment overridden")
	}
	if got := debug.SetGCPercent(100); got != 100 {
		t.Fatalf("GC percent %d with GOGC set, want it untouched (100)", got)
	}
}
