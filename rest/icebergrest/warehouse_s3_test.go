package icebergrest

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
)

func TestS3WarehouseLocations(t *testing.T) {
	wh, err := newWarehouse(Warehouse{Name: "lake", Location: "s3://bucket/wh/"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := wh.location(), "s3://bucket/wh"; got != want {
		t.Fatalf("root %q, want %q", got, want)
	}
	for _, tc := range []struct {
		loc  string
		want string // "" means refused
	}{
		{"s3://bucket/wh/ns/t-1", "s3://bucket/wh/ns/t-1"},
		{"s3://bucket/wh/ns/t-1/", "s3://bucket/wh/ns/t-1"},
		{"S3://bucket/wh/ns/t", "s3://bucket/wh/ns/t"},
		{"s3://bucket/wh", ""},      // the root itself
		{"s3://bucket/wh2/t", ""},   // a sibling sharing the prefix
		{"s3://other/wh/t", ""},     // another bucket
		{"s3a://bucket/wh/t", ""},   // another scheme
		{"file:///bucket/wh/t", ""}, // local
		{"s3://bucket/wh/../x", ""}, // climbing out
		{"s3://bucket/wh/ns/%2e%2e/x", ""},
		{"s3://bucket/wh/./t", ""},
		{"s3:///wh/t", ""}, // no bucket
		{"s3://key:secret@bucket/wh/t", ""},
		{"s3://bucket/wh/t?versionId=1", ""},
	} {
		got, err := wh.contains(tc.loc)
		if tc.want == "" {
			if err == nil {
				t.Errorf("contains(%q) = %q, want refused", tc.loc, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("contains(%q) = %q, %v; want %q", tc.loc, got, err, tc.want)
		}
	}

	id := identifier{Namespace: []string{"sales", "eu"}, Name: "orders"}
	if got, want := wh.defaultTableLocation(id, "0b7c"), "s3://bucket/wh/sales/eu/orders-0b7c"; got != want {
		t.Fatalf("default location %q, want %q", got, want)
	}
	odd := identifier{Namespace: []string{".."}, Name: "../x"}
	if loc := wh.defaultTableLocation(odd, "u"); !strings.HasPrefix(loc, "s3://bucket/wh/") {
		t.Fatalf("default location %q escapes the warehouse", loc)
	} else if _, err := wh.contains(loc); err != nil {
		t.Fatalf("default location %q refused: %v", loc, err)
	}

	bucketRoot, err := newWarehouse(Warehouse{Name: "b", Location: "s3://bucket"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bucketRoot.contains("s3://bucket/t"); err != nil {
		t.Fatalf("a bucket-root warehouse refuses s3://bucket/t: %v", err)
	}
}

func TestNewWarehouseRefusesBadRoots(t *testing.T) {
	for _, loc := range []string{"s3:///wh", "s3://", "gs://bucket/wh", "hdfs://nn/wh", "s3://bucket/a/../b"} {
		if _, err := newWarehouse(Warehouse{Name: "lake", Location: loc}); err == nil {
			t.Errorf("newWarehouse(%q) accepted", loc)
		}
	}
}

func TestWarehouseOfPicksTheInnermostRoot(t *testing.T) {
	a, err := newAPI(Deps{Store: nil, Warehouses: nil})
	if err == nil || a != nil {
		t.Fatal("newAPI without store must fail")
	}
	whs := map[string]*warehouse{}
	for _, w := range []Warehouse{
		{Name: "lake", Location: "s3://bucket/wh"},
		{Name: "inner", Location: "s3://bucket/wh/inner"},
		{Name: "local", Location: "file:///srv/lake"},
	} {
		wh, err := newWarehouse(w)
		if err != nil {
			t.Fatal(err)
		}
		whs[w.Name] = wh
	}
	api := &api{warehouses: whs}
	for loc, want := range map[string]string{
		"s3://bucket/wh/ns/t/metadata/00000-x.metadata.json":   "lake",
		"s3://bucket/wh/inner/ns/t/metadata/0.metadata.json":   "inner",
		"file:///srv/lake/ns/t/metadata/00001-x.metadata.json": "local",
		"s3://other/wh/t/m.json":                               "",
		"s3://bucket/wh/../t/m.json":                           "",
	} {
		got := ""
		if wh := api.warehouseOf(loc); wh != nil {
			got = wh.name
		}
		if got != want {
			t.Errorf("warehouseOf(%q) = %q, want %q", loc, got, want)
		}
	}
}

func TestS3OptionsProperties(t *testing.T) {
	o := S3Options{Endpoint: "http://127.0.0.1:9000", Region: "eu-west-1", PathStyle: true, AccessKeyID: "AK", SecretAccessKey: "SK"}
	wantIO := map[string]string{
		"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "eu-west-1",
		"s3.access-key-id": "AK", "s3.secret-access-key": "SK",
		"s3.force-virtual-addressing": "false", "s3.connect-timeout": s3ConnectTimeout,
	}
	if got := o.IOProperties(); !maps.Equal(got, wantIO) {
		t.Errorf("IOProperties = %v, want %v", got, wantIO)
	}
	wantClient := map[string]string{
		"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "eu-west-1",
		"s3.path-style-access": "true", "s3.force-virtual-addressing": "false",
	}
	if got := o.ClientConfig(); !maps.Equal(got, wantClient) {
		t.Errorf("ClientConfig without ClientCredentials = %v, want %v", got, wantClient)
	}
	o.ClientCredentials = true
	wantClient["s3.access-key-id"], wantClient["s3.secret-access-key"] = "AK", "SK"
	if got := o.ClientConfig(); !maps.Equal(got, wantClient) {
		t.Errorf("ClientConfig with ClientCredentials = %v, want %v", got, wantClient)
	}

	// AWS itself: virtual-hosted addressing and the default credential chain.
	aws := S3Options{Region: "us-east-1"}
	if got, want := aws.IOProperties(), map[string]string{
		"s3.region": "us-east-1", "s3.force-virtual-addressing": "true", "s3.connect-timeout": s3ConnectTimeout,
	}; !maps.Equal(got, want) {
		t.Errorf("AWS IOProperties = %v, want %v", got, want)
	}
	if got := aws.ClientConfig(); got["s3.path-style-access"] != "false" || got["s3.access-key-id"] != "" {
		t.Errorf("AWS ClientConfig = %v", got)
	}
}

func TestTableReplyCarriesClientConfig(t *testing.T) {
	meta := []byte(`{"format-version":2,"location":"s3://bucket/wh/t"}`)
	for _, cfg := range []map[string]string{nil, {"s3.endpoint": "http://h:1", "s3.region": "r"}} {
		wh, err := newWarehouse(Warehouse{Name: "lake", Location: "s3://bucket/wh", ClientConfig: cfg})
		if err != nil {
			t.Fatal(err)
		}
		rp := wh.tableReply("s3://bucket/wh/t/metadata/00000-x.metadata.json", meta)
		var got struct {
			Location string            `json:"metadata-location"`
			Metadata json.RawMessage   `json:"metadata"`
			Config   map[string]string `json:"config"`
		}
		if err := json.Unmarshal(rp.body, &got); err != nil {
			t.Fatalf("reply %s: %v", rp.body, err)
		}
		if string(got.Metadata) != string(meta) || got.Location == "" {
			t.Errorf("reply %s lost the metadata", rp.body)
		}
		if got.Config == nil || !maps.Equal(got.Config, cfg) && len(cfg) > 0 || len(got.Config) != len(cfg) {
			t.Errorf("config %v, want %v", got.Config, cfg)
		}
	}
}
