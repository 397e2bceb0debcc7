package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy says how long to wait before each retry. The n-th retry (n from
// 1) waits a random duration in [d/2, d], d = min(Max, Base·2^(n-1)):
// exponential growth bounds the load of a long outage, and drawing from
// the upper half ("equal jitter") spreads callers that failed at the same
// moment while keeping each wait at least half its step.
type Policy struct {
	Base time.Duration // the first step; must be positive
	Max  time.Duration // the largest step; 0 means no bound
}

// Step is d for the n-th retry: the delay before jitter.
func (p Policy) Step(n int) time.Duration {
	d := p.Base
	for i := 1; i < n; i++ {
		if p.Max > 0 && d >= p.Max {
			break
		}
		if d > time.Duration(1<<62)/2 { // no overflow on long outages
			break
		}
		d *= 2
	}
	if p.Max > 0 && d > p.Max {
		d = p.Max
	}
	return d
}

// Delay is the wait before the n-th retry, jitter included.
func (p Policy) Delay(n int) time.Duration {
	d := p.Step(n)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// Wait sleeps Delay(n), or less if ctx ends first, then returns ctx's
// error.
func (p Policy) Wait(ctx context.Context, n int) error {
	t := time.NewTimer(p.Delay(n))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
