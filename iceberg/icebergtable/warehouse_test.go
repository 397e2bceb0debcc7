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

	if got, want := wh.DefaultNamespaceLocation([]string{"sales", "eu"}), "s3://bucket/wh/sales/eu"; got != want {
		t.Fatalf("default namespace location %q, want %q", got, want)
	}
	// A table's default location lies in its namespace's, so a client that
	// derives one from the other stays where floe would put it.
	if ns, tbl := wh.DefaultNamespaceLocation([]string{"a b", "c"}), wh.DefaultTableLocation([]string{"a b", "c"}, "t", "u"); !strings.HasPrefix(tbl, ns+"/") {
		t.Fatalf("table location %q is not inside namespace location %q", tbl, ns)
	}
	if loc := wh.DefaultNamespaceLocation([]string{".."}); !strings.HasPrefix(loc, "s3://bucket/wh/") {
		t.Fatalf("default namespace location %q escapes the warehouse", loc)
	} else if _, err := wh.Contains(loc + "/t"); err != nil {
		t.Fatalf("a table in default namespace location %q refused: %v", loc, err)
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
		"s3.endpoint": "http://127.0.0.1:9000", "s3.region": "eu-west-1", "client.region": "eu-west-1",
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

// FuzzContains checks the location rule every metadata location entering
// the store goes through: a location Contains accepts lies strictly below
// the root once normalized (no "." or ".." segment, raw or decoded, same
// scheme and bucket), the normalized form is accepted again as itself, and
// nothing panics.
func FuzzContains(f *testing.F) {
	for _, s := range []string{
		"file:///srv/lake/db/t/metadata/00000-a.metadata.json", "/srv/lake/x", "file:///srv/lake", "file:///srv/lake/",
		"file:///srv/lakex/t", "file:///srv/lake/../etc/passwd", "file:///srv/lake/%2e%2e/x", "file://host/srv/lake/x",
		"file://localhost/srv/lake/x", "s3://bucket/wh/t", "s3://bucket/wh/../t", "s3://other/wh/t", "S3://bucket/wh/t",
		"file:///srv/lake/a?b", "file:///srv/lake/a#b", "file:///srv/lake//a", "file:///srv/lake/a%00b", "relative/x", "",
	} {
		f.Add("file:///srv/lake", s)
		f.Add("s3://bucket/wh", s)
	}
	f.Fuzz(func(t *testing.T, root, loc string) {
		wh, err := OpenWarehouse(Config{Name: "lake", Location: root})
		if err != nil {
			return
		}
		got, err := wh.Contains(loc)
		if err != nil {
			if got != "" {
				t.Fatalf("Contains(%q) refused with a location %q", loc, got)
			}
			return
		}
		u, err := normalizeLocation(got)
		if err != nil {
			t.Fatalf("Contains(%q) = %q, which does not parse: %v", loc, got, err)
		}
		r := wh.root
		if u.Scheme != r.Scheme || u.Host != r.Host {
			t.Fatalf("Contains(%q) = %q: scheme or bucket differ from root %s", loc, got, wh.Location())
		}
		prefix := strings.TrimSuffix(r.Path, "/") + "/"
		if !strings.HasPrefix(u.Path, prefix) || len(u.Path) <= len(prefix) {
			t.Fatalf("Contains(%q) = %q, not strictly below root %s", loc, got, wh.Location())
		}
		for _, seg := range strings.Split(u.Path, "/") {
			if seg == "." || seg == ".." {
				t.Fatalf("Contains(%q) = %q has a %q segment", loc, got, seg)
			}
		}
		if again, err := wh.Contains(got); err != nil || again != got {
			t.Fatalf("Contains(%q) = %q, but Contains of that = %q, %v", loc, got, again, err)
		}
		if s, err := (Warehouses{wh, wh}).Contains(loc); err != nil || s != got {
			t.Fatalf("Warehouses.Contains(%q) = %q, %v; one warehouse says %q", loc, s, err, got)
		}
	})
}

func TestAllowedLocations(t *testing.T) {
	base := t.TempDir()
	allowed := base + "/allowed"
	wh, err := OpenWarehouse(Config{Name: "lake", Location: base + "/wh",
		AllowedLocations: []string{"file://" + allowed + "/", "s3://other/prefix"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		loc string
		ok  bool
	}{
		{base + "/wh/ns/t", true},
		{"file://" + allowed + "/ns/t", true},
		{allowed + "/t", true},
		{"s3://other/prefix/t", true},
		{"file://" + allowed, false},    // the prefix itself
		{allowed + "-evil/t", false},    // a look-alike sibling
		{allowed + "/../wh2/t", false},  // climbing out
		{base + "/elsewhere/t", false},  // outside both
		{"s3://other/prefix2/t", false}, // a look-alike on S3
		{"s3://other/t", false},         // the bucket outside the prefix
		{"s3a://other/prefix/t", false}, // another scheme
	} {
		got, err := wh.Contains(tc.loc)
		if (err == nil) != tc.ok {
			t.Errorf("Contains(%q) = %q, %v; want accepted %v", tc.loc, got, err, tc.ok)
		}
	}
	if _, err := wh.Contains(base + "/elsewhere/t"); err == nil || !strings.Contains(err.Error(), "allowed locations") {
		t.Errorf("the refusal does not name the allowed locations: %v", err)
	}

	// Files under a local allowed prefix outside the warehouse are
	// written and read.
	loc := "file://" + allowed + "/ns/t/metadata/00000-x.metadata.json"
	if err := wh.WriteFile(t.Context(), loc, []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if raw, err := wh.ReadFile(t.Context(), loc); err != nil || string(raw) != "{}" {
		t.Fatalf("ReadFile = %q, %v", raw, err)
	}
	if _, err := wh.ReadFile(t.Context(), "file://"+allowed+"-evil/m.json"); err == nil {
		t.Fatal("ReadFile outside the allowed locations succeeded")
	}
	if got := Innermost(loc, []*Warehouse{wh}); got != wh {
		t.Fatalf("Innermost(%q) = %v, want the warehouse that allows it", loc, got)
	}
}

func TestOpenWarehouseRefusesBadAllowedLocations(t *testing.T) {
	for _, loc := range []string{"/", "file:/", "file:///", "", "relative/dir", "/tmp/a/../b", "gs://bucket/p", "s3:///p", "file://remote/x"} {
		if _, err := OpenWarehouse(Config{Name: "lake", Location: "/srv/lake", AllowedLocations: []string{loc}}); err == nil {
			t.Errorf("allowed location %q accepted", loc)
		}
	}
}
