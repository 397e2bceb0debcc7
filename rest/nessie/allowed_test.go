package nessie_test

import (
	"net/http"
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/rest/icebergrest"
)

// TestCommitLocationUnderAllowedPrefix: a Nessie commit may name a
// metadata file under an operator's allowed location prefix, as `floe
// serve --allowed-location` configures the Iceberg facade's warehouse; a
// look-alike prefix stays refused.
func TestCommitLocationUnderAllowedPrefix(t *testing.T) {
	allowed := t.TempDir() + "/allowed"
	s := testserver.Start(t, testserver.Options{Iceberg: func(d *icebergrest.Deps) {
		d.Warehouses[0].AllowedLocations = []string{"file://" + allowed}
	}})
	e := &testEnv{t: t, url: s.URL, store: s.Store}
	e.commit("main", "ns", put(namespace("db"), "db"))
	e.commit("main", "t", put(table("file://"+allowed+"/db/t/metadata/00000-a.metadata.json", 1), "db", "t"))
	e.fail(http.MethodPost, "/trees/main@"+e.head("main")+"/history/commit",
		map[string]any{"commitMeta": map[string]any{"message": "m"}, "operations": []operation{
			put(table("file://"+allowed+"-evil/db/u/metadata/00000-a.metadata.json", 1), "db", "u")}},
		http.StatusBadRequest, "BAD_REQUEST")
}
