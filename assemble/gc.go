package assemble

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/floe-catalog/floe/gc"
	"github.com/floe-catalog/floe/icebergtable"
	"github.com/floe-catalog/floe/versionstore"
)

// newCollector builds garbage collection over the warehouses the Iceberg
// REST facade serves. The version store's directory is never swept, even
// when it lies inside a warehouse.
func (p *Process) newCollector(cfg Config, store *versionstore.Store, whs icebergtable.Warehouses, logger *slog.Logger, reg prometheus.Registerer) (*gc.Collector, error) {
	c, err := gc.New(gc.Options{Store: store, Warehouses: whs, Grace: cfg.GC.Grace, TempDir: cfg.GC.TempDir,
		ReportFile: cfg.GC.ReportFile, Exclude: []string{cfg.DataDir}, Logger: logger, Metrics: reg})
	if err != nil {
		return nil, err
	}
	p.onClose("garbage collector", c.Close)
	return c, nil
}
