package changefeed

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/feedevent"
)

// The payloads of the events that are not reference moves, as their
// writers build them (versionstore/feedevent).
type (
	QueueChange      = feedevent.QueueChange
	GCRun            = feedevent.GCRun
	PolicyActivation = feedevent.PolicyActivation
)

// logEvent derives the event of a RefLogEvent entry. A kind this version
// does not know has no event; the entry still advances the cursor.
func (d *deriver) logEvent(ctx context.Context, base Event, e *versionstore.RefLogEntry) ([]Event, error) {
	kind, payload, err := d.store.ReadLogEvent(ctx, e)
	if err != nil {
		return nil, err
	}
	ev := base
	if e.Ref == "" {
		ev.RefType = ""
	}
	var doc any
	switch kind {
	case feedevent.KindQueue:
		ev.Type, ev.Queue = QueueChanged, &QueueChange{}
		doc = ev.Queue
	case feedevent.KindGC:
		ev.Type, ev.GC = GCCompleted, &GCRun{}
		doc = ev.GC
	case feedevent.KindPolicy:
		ev.Type, ev.Policy = PolicyActivated, &PolicyActivation{}
		doc = ev.Policy
	default:
		return nil, nil
	}
	if err := json.Unmarshal(payload, doc); err != nil {
		return nil, fmt.Errorf("decode %s event: %w", kind, err)
	}
	if ev.Queue != nil {
		ev.Commit = ev.Queue.Commit
	}
	return []Event{ev}, nil
}
