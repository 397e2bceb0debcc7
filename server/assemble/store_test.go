package assemble

import (
	"strings"
	"testing"
)

func TestParseStore(t *testing.T) {
	for _, tc := range []struct {
		store, dataDir string
		kind           StoreKind
		where          string
	}{
		{"", "./data", StorePebble, "./data"},
		{"pebble:", "./data", StorePebble, "./data"},
		{"pebble:/var/lib/floe", "./data", StorePebble, "/var/lib/floe"},
		{"postgres://floe@db/floe", "./data", StorePostgres, "postgres://floe@db/floe"},
		{"postgresql://floe@db/floe?sslmode=disable", "", StorePostgres, "postgresql://floe@db/floe?sslmode=disable"},
		{"postgres:host=db user=floe", "", StorePostgres, "host=db user=floe"},
	} {
		kind, where, err := ParseStore(tc.store, tc.dataDir)
		if err != nil || kind != tc.kind || where != tc.where {
			t.Errorf("ParseStore(%q, %q) = %q, %q, %v; want %q, %q", tc.store, tc.dataDir, kind, where, err, tc.kind, tc.where)
		}
	}
	// An unknown store is refused without echoing it: it may hold a
	// password.
	_, _, err := ParseStore("mysql://root:s3cret@db/floe", "")
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("unknown store: %v", err)
	}
}

func TestStoreCacheBytes(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want int64
	}{
		{Config{DataDir: "/d"}, DefaultPebbleStoreCacheBytes},
		{Config{Store: "pebble:/x"}, DefaultPebbleStoreCacheBytes},
		{Config{Store: "postgres://u@h/db"}, DefaultPostgresStoreCacheBytes},
		{Config{Store: "postgres://u@h/db", StoreCacheBytes: 1 << 20}, 1 << 20},
		{Config{StoreCacheBytes: 5 << 20}, 5 << 20},
	} {
		if got := StoreCacheBytes(tc.cfg); got != tc.want {
			t.Errorf("StoreCacheBytes(store %q, %d) = %d, want %d", tc.cfg.Store, tc.cfg.StoreCacheBytes, got, tc.want)
		}
	}
}
