package icebergrest

import (
	"encoding/json"
	"maps"
	"testing"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
)

func TestTableReplyCarriesClientConfig(t *testing.T) {
	files, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: "s3://bucket/wh"})
	if err != nil {
		t.Fatal(err)
	}
	meta := []byte(`{"format-version":2,"location":"s3://bucket/wh/t"}`)
	for _, cfg := range []map[string]string{nil, {"s3.endpoint": "http://h:1", "s3.region": "r"}} {
		wh, err := newWarehouse(Warehouse{Name: "lake", Location: "s3://bucket/wh", ClientConfig: cfg}, files, nil)
		if err != nil {
			t.Fatal(err)
		}
		rp := metadataReply("s3://bucket/wh/t/metadata/00000-x.metadata.json", meta, wh.clientConfigJSON)
		var got struct {
			Location string            `json:"metadata-location"`
			Metadata json.RawMessage   `json:"metadata"`
			Config   map[string]string `json:"config"`
		}
		if err := json.Unmarshal(rp.bodyBytes(), &got); err != nil {
			t.Fatalf("reply %s: %v", rp.bodyBytes(), err)
		}
		if string(got.Metadata) != string(meta) || got.Location == "" {
			t.Errorf("reply %s lost the metadata", rp.bodyBytes())
		}
		if got.Config == nil || !maps.Equal(got.Config, cfg) && len(cfg) > 0 || len(got.Config) != len(cfg) {
			t.Errorf("config %v, want %v", got.Config, cfg)
		}
	}
}
