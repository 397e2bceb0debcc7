package gc_test

import (
	"context"
	"testing"
	"time"

	"github.com/floe-catalog/floe/housekeeping/gc"
)

// Schedule runs a collection every interval, as "schedule", until its
// context ends. (The store's Pebble cannot run inside a synctest bubble,
// so this waits on a real ticker; it asserts nothing about time.)
func TestScheduleRunsEveryInterval(t *testing.T) {
	l := newLake(t)
	l.Create("main", "ns.a")
	c := l.collector(gc.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		c.Schedule(ctx, 10*time.Millisecond)
		close(done)
	}()
	var rep *gc.Report
	for {
		var err error
		if rep, err = c.LastReport(t.Context()); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if rep.Principal != "schedule" || rep.DryRun || rep.Outcome != gc.OutcomeOK {
		t.Fatalf("scheduled run: %+v", rep)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Start(gc.RunOptions{}); err == nil {
		t.Fatal("a run started after Close")
	}
}
