package mergequeue

import (
	"context"

	"github.com/floe-catalog/floe/versionstore"
)

// checkBypass looks at a protected target's head: if it moved since the
// queue last saw it, every commit in between reached it by another path
// than the queue. They are counted and logged (the seed's "alert on
// direct commits to main").
func (q *Queue) checkBypass(ctx context.Context, target string) {
	if !q.rules.protected(target) {
		return
	}
	ref, err := q.store.GetRef(target)
	if err != nil {
		return
	}
	w := q.worker(target)
	known, ok := w.saw(ref.Head)
	if !ok || known == ref.Head {
		return
	}
	n := 0
	for h := ref.Head; h != known && h != versionstore.NoAncestor && n < 10000; n++ {
		c, err := q.store.ReadCommit(ctx, h)
		if err != nil {
			break
		}
		h = c.Parent()
	}
	n = max(n, 1)
	w.addBypassed(n)
	q.metrics.bypass.WithLabelValues(target).Add(float64(n))
	q.logger.WarnContext(ctx, "merge queue: commits reached a queue-managed branch without the queue", "target", target,
		"commits", n, "from", known.String(), "to", ref.Head.String())
}
