package icebergrest_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/floe-catalog/floe/catalog"
)

// TestLoadTableMissingMetadataFile: a table whose metadata file storage no
// longer has is a 404 NotFoundException in Java's words, not a 500 saying
// the store is unreachable: with the metadata cache off, as after a
// restart, and with the file in the cache (loaded once before it was
// deleted), which must not hide that storage lost it.
func TestLoadTableMissingMetadataFile(t *testing.T) {
	for name, cacheBytes := range map[string]int64{"cache off": -1, "cached": 0} {
		t.Run(name, func(t *testing.T) {
			e := newEnvWith(t, t.TempDir(), nil, func(c *catalog.Config) { c.MetadataCacheBytes = cacheBytes })
			e.createNamespace("lake", "ns")
			created := e.createTable("lake", "ns", "t")
			if resp := e.do(http.MethodGet, "/v1/lake/namespaces/ns/tables/t", nil); resp.status != http.StatusOK {
				t.Fatalf("load before the deletion: %d", resp.status)
			}
			if err := os.Remove(fileURLPath(t, *created.MetadataLocation)); err != nil {
				t.Fatal(err)
			}
			checkError(t, e.do(http.MethodGet, "/v1/lake/namespaces/ns/tables/t", nil), http.StatusNotFound, "NotFoundException",
				"Failed to open input stream for file: "+*created.MetadataLocation)
		})
	}
}
