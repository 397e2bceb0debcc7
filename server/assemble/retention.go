package assemble

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/housekeeping/refretention"
	"github.com/floe-catalog/floe/versionstore"
)

// RefRetention configures references' retention (refretention) and its
// expiry sweep.
type RefRetention struct {
	// Config holds the defaults by branch prefix and the protected
	// prefixes; nil means refretention.DefaultConfig().
	Config *refretention.Config
	// ExpiryInterval is how often the background sweep deletes expired
	// references; 0 runs none (floe's API can still run one on demand).
	ExpiryInterval time.Duration
}

// newRetention builds the retention service over the store. Its sweep
// is started with the other background workers; the garbage collector
// asks it each reference's history rule (Service.HistoryFor).
func newRetention(cfg RefRetention, now func() time.Time, store *versionstore.Store, logger *slog.Logger, reg prometheus.Registerer) (*refretention.Service, error) {
	rc := refretention.DefaultConfig()
	if cfg.Config != nil {
		rc = *cfg.Config
	}
	return refretention.New(refretention.Options{Store: store, Config: rc, Now: now, Logger: logger, Metrics: reg})
}
