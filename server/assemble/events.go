package assemble

import (
	"context"
	"fmt"
	"os"

	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore/feedevent"
)

// policyActivated appends a policy bundle activation to the change feed
// (policy.activated), naming this replica: each replica activates bundles
// on its own. The activation is in memory and precedes the event; if the
// event cannot be written the activation stands, is logged, and the next
// start (which activates the bundle again) reports it.
func (p *Process) policyActivated(ctx context.Context, a policy.Activation) {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	ev, err := feedevent.PolicyEvent(feedevent.PolicyActivation{Source: a.Source, Revision: a.Revision,
		PreviousRevision: a.PreviousRevision, Replica: fmt.Sprintf("%s/%d", host, os.Getpid())})
	if err == nil {
		_, err = p.store.AppendEvent(context.WithoutCancel(ctx), ev)
	}
	if err != nil {
		p.logger.Warn("policy bundle activation not in the change feed", "revision", a.Revision, "source", a.Source, "err", err)
	}
}
