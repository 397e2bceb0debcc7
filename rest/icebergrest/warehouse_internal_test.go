package icebergrest

import (
	"encoding/json"
	"maps"
	"testing"
)

func TestTableReplyCarriesClientConfig(t *testing.T) {
	meta := []byte(`{"format-version":2,"location":"s3://bucket/wh/t"}`)
	for _, cfg := range []map[string]string{nil, {"s3.endpoint": "http://h:1", "s3.region": "r"}} {
		wh, err := newWarehouse(Warehouse{Name: "lake", Location: "s3://bucket/wh", ClientConfig: cfg}, nil, 0, nil)
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

func TestNewWarehouseRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", "a@b", "a|b", "a/b"} {
		if _, err := newWarehouse(Warehouse{Name: name, Location: "file:///srv/lake"}, nil, 0, nil); err == nil {
			t.Errorf("newWarehouse(%q) accepted", name)
		}
	}
}
