package icebergo

import (
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/catalogtest"
)

// TestCatalogConformance runs iceberg-go's own catalog conformance suite
// against floe. All tests share one server, as they would a REST fixture;
// the suite names everything uniquely.
func TestCatalogConformance(t *testing.T) {
	t.Parallel()
	f := startFloe(t)
	catalogtest.RunCatalogTests(t, catalogtest.Config{
		NewCatalog:                  func(t *testing.T) catalog.Catalog { return f.catalog(t, "lake") },
		SupportsNamespaceProperties: true,
	})
}
