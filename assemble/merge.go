package assemble

import (
	"log/slog"

	"github.com/floe-catalog/floe/classify"
	"github.com/floe-catalog/floe/icebergtable"
	"github.com/floe-catalog/floe/mergeengine"
	"github.com/floe-catalog/floe/versionstore"
)

// The merge layer reads and writes table metadata through the same
// warehouses as the Iceberg REST facade (API.Warehouses): one file IO and
// S3 client per warehouse, and one metadata cache, whose budget
// (--metadata-cache-bytes) therefore bounds them all.

// newClassifier classifies the tables of dry-run merges.
func newClassifier(whs icebergtable.Warehouses) *classify.Classifier {
	return classify.New(whs...)
}

// newMerger builds the merge engine the Nessie API's merges go through.
func newMerger(cfg Config, store *versionstore.Store, whs icebergtable.Warehouses, logger *slog.Logger) (*mergeengine.Engine, error) {
	return mergeengine.New(mergeengine.Options{Store: store, Warehouses: whs,
		DefaultOverlap: mergeengine.OverlapRule(cfg.MergePartitionOverlap), Logger: logger})
}
