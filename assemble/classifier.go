package assemble

import (
	"log/slog"

	"github.com/floe-catalog/floe/classify"
	"github.com/floe-catalog/floe/icebergtable"
	"github.com/floe-catalog/floe/mergeengine"
	"github.com/floe-catalog/floe/rest/icebergrest"
	"github.com/floe-catalog/floe/versionstore"
)

// classifierCacheBytes bounds the metadata cache of the merge
// classifier's warehouses. Dry-run merges are rare beside loads and
// commits, so a quarter of the facade's default is plenty.
const classifierCacheBytes = icebergtable.DefaultMetadataCacheBytes / 4

// newClassifier opens the warehouses the Iceberg REST facade serves, with
// the same locations and IO properties, for the classification of
// dry-run merges. They get a cache of their own: the facade keeps its
// warehouses private, and the files are immutable, so two caches never
// disagree.
func newClassifier(deps icebergrest.Deps) (*classify.Classifier, error) {
	whs, err := openWarehouses(deps)
	if err != nil {
		return nil, err
	}
	return classify.New(whs...), nil
}

// newMerger builds the merge engine the Nessie API's merges go through,
// over warehouses of its own opened as the classifier's are.
func newMerger(cfg Config, store *versionstore.Store, logger *slog.Logger) (*mergeengine.Engine, error) {
	whs, err := openWarehouses(cfg.Iceberg)
	if err != nil {
		return nil, err
	}
	return mergeengine.New(mergeengine.Options{Store: store, Warehouses: whs,
		DefaultOverlap: mergeengine.OverlapRule(cfg.MergePartitionOverlap), Logger: logger})
}

// openWarehouses opens the facade's warehouses, with the same locations
// and IO properties, sharing one metadata cache of classifierCacheBytes.
func openWarehouses(deps icebergrest.Deps) ([]*icebergtable.Warehouse, error) {
	var cache *icebergtable.MetadataCache
	if deps.MetadataCacheBytes >= 0 {
		cache = icebergtable.NewMetadataCache(classifierCacheBytes)
	}
	var whs []*icebergtable.Warehouse
	for _, w := range deps.Warehouses {
		wh, err := icebergtable.OpenWarehouse(icebergtable.Config{
			Name: w.Name, Location: w.Location, IOProperties: w.IOProperties, Cache: cache,
		})
		if err != nil {
			return nil, err
		}
		whs = append(whs, wh)
	}
	return whs, nil
}
