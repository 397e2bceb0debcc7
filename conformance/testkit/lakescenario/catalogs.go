package lakescenario

import (
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/floe-catalog/floe/versionstore"
)

// Catalogs opens the REST catalog of each catalog branch of one floe
// server (warehouse lake, lake@BRANCH for a branch but main) once, for a
// test or a benchmark, and closes them when it ends.
type Catalogs struct {
	url  string
	cats map[string]*rest.Catalog
}

// NewCatalogs returns the catalogs of the server at url.
func NewCatalogs(url string) *Catalogs {
	return &Catalogs{url: url, cats: map[string]*rest.Catalog{}}
}

// On is the catalog of branch. Not safe for concurrent use.
func (c *Catalogs) On(tb testing.TB, branch string) *rest.Catalog {
	tb.Helper()
	if cat, ok := c.cats[branch]; ok {
		return cat
	}
	wh := Warehouse
	if branch != versionstore.DefaultBranch {
		wh += "@" + branch
	}
	cat, err := rest.NewCatalog(tb.Context(), "floe", c.url, rest.WithWarehouseLocation(wh))
	if err != nil {
		tb.Fatalf("open catalog on %s: %v", wh, err)
	}
	tb.Cleanup(func() { _ = cat.Close() })
	c.cats[branch] = cat
	return cat
}
