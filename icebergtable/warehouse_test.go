package icebergtable

import (
	"maps"
	"strings"
	"testing"
)

func TestS3WarehouseLocations(t *testing.T) {
	wh, err := OpenWarehouse(Config{Name: "lake", Location: "s3://bucket/wh/"})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := wh.Location(), "s3://bucket/wh"; got != want {
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
		got, err := wh.Contains(tc.loc)
		if tc.want == "" {
			if err == nil {
				t.Errorf("Contains(%q) = %q, want refused", tc.loc, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Contains(%q) = %q, %v; want %q", tc.loc, got, err, tc.want)
		}
	}

	if got, want := wh.DefaultTableLocation([]string{"sales", "eu"}, "orders", "0b7c"), "s3://bucket/wh/sales/eu/orders-0b7c"; got != want {
		t.Fatalf("default location %q, want %q", got, want)
	}
	if loc := wh.DefaultTableLocation([]string{".."}, "../x", "u"); !strings.HasPrefix(loc, "s3://bucket/wh/") {
		t.Fatalf("default location %q escapes the warehouse", loc)
	} else if _, err := wh.Contains(loc); err != nil {
		t.Fatalf("default location %q refused: %v", loc, err)
	}

	bucketRoot, err := OpenWarehouse(Config{Name: "b", Location: "s3://bucket"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bucketRoot.Contains("s3://bucket/t"); err != nil {
		t.Fatalf("a bucket-root warehouse refuses s3://bucket/t: %v", err)
	}
}

func TestOpenWarehouseRefusesBadRoots(t *testing.T) {
	for _, loc := range []string{"", "s3:///wh", "s3://", "gs://bucket/wh", "hdfs://nn/wh", "s3://bucket/a/../b", "relative/dir"} {
		if _, err := OpenWarehouse(Config{Name: "lake", Location: loc}); err == nil {
			t.Errorf("OpenWarehouse(%q) accepted", loc)
		}
	}
}

func TestInnermostPicksTheInnermostRoot(t *testing.T) {
	var whs []*Warehouse
	for _, c := range []Config{
		{Name: "lake", Location: "s3://bucket/wh"},
		{Name: "inner", Location: "s3://bucket/wh/inner"},
		{Name: "local", Location: "file:///srv/lake"},
	} {
		wh, err := OpenWarehouse(c)
		if err != nil {
			t.Fatal(err)
		}
		whs = append(whs, wh)
	}
	for loc, want := range map[string]string{
		"s3://bucket/wh/ns/t/metadata/00000-x.metadata.json":   "lake",
		"s3://bucket/wh/inner/ns/t/metadata/0.metadata.json":   "inner",
		"file:///srv/lake/ns/t/metadata/00001-x.metadata.json": "local",
		"s3://other/wh/t/m.json":                               "",
		"s3://bucket/wh/../t/m.json":                           "",
	} {
		got := ""
		if wh := Innermost(loc, whs); wh != nil {
			got = wh.Name()
		}
		if got != want {
			t.Errorf("Innermost(%q) = %q, want %q", loc, got, want)
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
