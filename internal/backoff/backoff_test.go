package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestStepDoublesUpToMax(t *testing.T) {
	p := Policy{Base: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	for n, want := range map[int]time.Duration{1: 10 * time.Millisecond, 2: 20 * time.Millisecond, 3: 40 * time.Millisecond, 4: 50 * time.Millisecond, 1000: 50 * time.Millisecond} {
		if got := p.Step(n); got != want {
			t.Errorf("Step(%d) = %v, want %v", n, got, want)
		}
	}
	if got := (Policy{Base: time.Second}).Step(200); got <= 0 {
		t.Errorf("an unbounded step after 200 retries overflowed: %v", got)
	}
}

func TestDelayIsInTheUpperHalfOfItsStep(t *testing.T) {
	p := Policy{Base: 8 * time.Millisecond, Max: time.Second}
	for n := 1; n <= 10; n++ {
		d := p.Step(n)
		lo, hi := d, time.Duration(0)
		for range 200 {
			got := p.Delay(n)
			if got < d/2 || got > d {
				t.Fatalf("Delay(%d) = %v, outside [%v, %v]", n, got, d/2, d)
			}
			lo, hi = min(lo, got), max(hi, got)
		}
		if hi == lo {
			t.Fatalf("Delay(%d) always %v: no jitter", n, lo)
		}
	}
}

func TestWaitEndsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	start := time.Now()
	if err := (Policy{Base: time.Hour}).Wait(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait on a cancelled context: %v", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("Wait outlived its context")
	}
	if err := (Policy{Base: time.Millisecond}).Wait(t.Context(), 1); err != nil {
		t.Fatalf("Wait: %v", err)
	}
}
