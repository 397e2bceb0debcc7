package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
)

// TestAgainstFloe drives an in-process floe with the benchmark's client and
// workloads, counts and durations small: the client must speak floe's
// Iceberg REST API, the manifest lists must land in its warehouse, and the
// loss detector must find nothing lost on a server that loses nothing.
func TestAgainstFloe(t *testing.T) {
	srv := testserver.Start(t, testserver.Options{})
	ctx := t.Context()
	c, err := NewClient(ctx, srv.URL, "lake", 8)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st := NewStorage("", 8)
	if err := c.CreateNamespace(ctx, "ns"); err != nil {
		t.Fatal(err)
	}
	var tables []Table
	for _, name := range []string{"a", "b", "hot", "seq"} {
		md, err := c.CreateTable(ctx, "ns", name)
		if err != nil {
			t.Fatal(err)
		}
		tables = append(tables, Table{NS: "ns", Name: name, UUID: md.UUID})
	}

	stats, err := PropertyCommits(ctx, c, tables[:2], 2, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Ops != 10 {
		t.Errorf("property commits: %d ops, want 10", stats.Ops)
	}
	if _, err := Loads(ctx, c, tables[0], 2, 0, 3); err != nil {
		t.Fatal(err)
	}
	other := tables[0]
	other.UUID = tables[1].UUID
	if _, err := Loads(ctx, c, other, 1, 0, 1); err == nil || !strings.Contains(err.Error(), tables[0].UUID) {
		t.Errorf("loading %s.%s as the table of another UUID: %v, want an error naming its UUID", other.NS, other.Name, err)
	}

	// One client appending in sequence: every append on the parent it
	// asserted, each manifest list written where the snapshot points.
	if err := AddSnapshots(ctx, c, st, tables[3], 5, 2); err != nil {
		t.Fatal(err)
	}
	md, err := c.LoadTable(ctx, "ns", "seq")
	if err != nil {
		t.Fatal(err)
	}
	if len(md.Snapshots) != 5 || md.LastSequenceNumber != 5 {
		t.Fatalf("after 5 appends: %d snapshots, last-sequence-number %d", len(md.Snapshots), md.LastSequenceNumber)
	}
	for _, s := range md.Snapshots {
		p, err := localPath(s.ManifestList)
		if err != nil {
			t.Fatal(err)
		}
		if !filepath.IsAbs(p) {
			t.Errorf("manifest list %s: not a local path", s.ManifestList)
		}
		if _, err := os.Stat(p); err != nil {
			t.Errorf("manifest list of snapshot %d: %v", s.ID, err)
		}
	}

	// Concurrent appends to one table: nothing acknowledged may be lost.
	res, err := HotAppends(ctx, c, st, tables[2], 4, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if res.Ops == 0 || res.Errors != 0 {
		t.Fatalf("hot appends: %d acknowledged, %d errors (first: %s)", res.Ops, res.Errors, res.FirstError)
	}
	if res.Loss.Lost() != 0 || !res.Loss.ChainComplete || res.Loss.Acked != res.Ops {
		t.Errorf("hot appends on floe: %s", res.Loss)
	}
}
