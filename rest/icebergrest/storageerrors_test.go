package icebergrest_test

import (
	"net/http"
	"os"
	"testing"

	"github.com/floe-catalog/floe/rest/icebergrest"
)

// TestLoadTableMissingMetadataFile: a table whose metadata file storage no
// longer has is a 404 NotFoundException in Java's words, not a 500 saying
// the store is unreachable. The metadata cache is off, as after a restart.
func TestLoadTableMissingMetadataFile(t *testing.T) {
	e := newEnvAt(t, t.TempDir(), func(d *icebergrest.Deps) { d.MetadataCacheBytes = -1 })
	e.createNamespace("lake", "ns")
	created := e.createTable("lake", "ns", "t")
	if err := os.Remove(fileURLPath(t, *created.MetadataLocation)); err != nil {
		t.Fatal(err)
	}
	checkError(t, e.do(http.MethodGet, "/v1/lake/namespaces/ns/tables/t", nil), http.StatusNotFound, "NotFoundException",
		"Failed to open input stream for file: "+*created.MetadataLocation)
}
