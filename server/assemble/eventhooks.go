package assemble

import (
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/catalog/changefeed"
	"github.com/floe-catalog/floe/catalog/eventhooks"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/versionstore"
)

// EventWebhooks configures the push of the change feed to webhooks
// (package eventhooks).
type EventWebhooks struct {
	// File is the subscriptions' configuration (`floe serve
	// --event-webhooks`); "" means none, and nothing is pushed.
	File string
	// Subscriptions are used instead of File's when set (tests), with
	// Source as the CloudEvents source.
	Subscriptions []eventhooks.Subscription
	Source        string
	// Poll and SaveEvery are the deliverer's (eventhooks.Options); 0
	// means its defaults.
	Poll, SaveEvery time.Duration
}

// newEventHooks builds the webhook deliverer over the feed, or nil when
// no subscription is configured. Each subscription reads as its principal
// through the policy engine (nil: authorization off).
func newEventHooks(cfg EventWebhooks, store *versionstore.Store, feed *changefeed.Feed, engine *policy.Engine,
	logger *slog.Logger, reg prometheus.Registerer) (*eventhooks.Service, error) {
	subs, source := cfg.Subscriptions, cfg.Source
	if cfg.File != "" && subs == nil {
		var err error
		if source, subs, err = eventhooks.LoadConfig(cfg.File, os.Getenv); err != nil {
			return nil, err
		}
	}
	if len(subs) == 0 {
		return nil, nil
	}
	opts := eventhooks.Options{Store: store, Feed: feed, Subscriptions: subs, Source: source, Logger: logger, Metrics: reg,
		Poll: cfg.Poll, SaveEvery: cfg.SaveEvery}
	if engine != nil {
		opts.Decider = engine // a nil *Engine in the interface would not be nil
	}
	return eventhooks.New(opts)
}
