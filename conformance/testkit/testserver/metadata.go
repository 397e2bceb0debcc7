package testserver

import (
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// WriteTableMetadata writes a valid Iceberg metadata file without
// snapshots at location (a file:// URL or a path) for tests that commit
// tables through the store or the Nessie API: its current schema is
// schemaID, each schema before it kept and one optional column shorter,
// so a higher schemaID is a schema change. The table's location is the
// file's parent's parent, its UUID derived from that.
func WriteTableMetadata(t testing.TB, location string, schemaID int) {
	t.Helper()
	path := strings.TrimPrefix(location, "file://")
	tableLoc := strings.TrimSuffix(location, "/"+filepath.Base(path))
	h := fnv.New64a()
	h.Write([]byte(tableLoc))
	var schemas []string
	for id := 0; id <= schemaID; id++ {
		fields := `{"id":1,"name":"id","required":true,"type":"long"}`
		for f := 2; f <= id+1; f++ {
			fields += fmt.Sprintf(`,{"id":%d,"name":"c%d","required":false,"type":"string"}`, f, f)
		}
		schemas = append(schemas, fmt.Sprintf(`{"type":"struct","schema-id":%d,"fields":[%s]}`, id, fields))
	}
	doc := fmt.Sprintf(`{"format-version":2,"table-uuid":"00000000-0000-4000-8000-%012x","location":%q,`+
		`"last-sequence-number":0,"last-updated-ms":1700000000000,"last-column-id":%d,"current-schema-id":%d,`+
		`"schemas":[%s],"default-spec-id":0,"partition-specs":[{"spec-id":0,"fields":[]}],"last-partition-id":999,`+
		`"default-sort-order-id":0,"sort-orders":[{"order-id":0,"fields":[]}],"properties":{},"current-snapshot-id":-1,`+
		`"refs":{},"snapshots":[],"snapshot-log":[],"metadata-log":[]}`,
		h.Sum64()&0xffffffffffff, tableLoc, schemaID+1, schemaID, strings.Join(schemas, ","))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}
