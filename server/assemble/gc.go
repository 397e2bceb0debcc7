package assemble

import (
	"context"
	"errors"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/housekeeping/gc"
	"github.com/floe-catalog/floe/housekeeping/refretention"
	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// newCollector builds garbage collection over the warehouses the Iceberg
// REST facade serves. The version store's directory is never swept, even
// when it lies inside a warehouse.
// Each reference's history is kept as its retention says (package
// refretention); retention nil keeps every reference's whole history.
func (p *Process) newCollector(cfg Config, store *versionstore.Store, whs icebergtable.Warehouses, retention *refretention.Service, logger *slog.Logger, reg prometheus.Registerer) (*gc.Collector, error) {
	var history func(context.Context, *versionstore.Ref) (gc.HistoryRule, error)
	if retention != nil {
		history = func(ctx context.Context, ref *versionstore.Ref) (gc.HistoryRule, error) {
			commits, age, err := retention.HistoryFor(ctx, ref.Name)
			if errors.Is(err, versionstore.ErrReferenceNotFound) {
				// Deleted since the run listed it: keeping all is safe.
				return gc.HistoryRule{}, nil
			}
			return gc.HistoryRule{Commits: commits, Age: age}, err
		}
	}
	c, err := gc.New(gc.Options{Store: store, Warehouses: whs, Grace: cfg.GC.Grace, TempDir: cfg.GC.TempDir,
		ReportFile: cfg.GC.ReportFile, Exclude: []string{cfg.DataDir}, History: history, Logger: logger, Metrics: reg})
	if err != nil {
		return nil, err
	}
	p.onClose("garbage collector", c.Close)
	return c, nil
}
