package peerbench_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/peerbench"
)

// peer is a server under benchmark and the variable holding its URL.
type peer struct{ name, env string }

func peers() []peer {
	return []peer{{"floe", "FLOE_PEER_FLOE_URL"}, {"nessie", "FLOE_PEER_NESSIE_URL"}}
}

// warmUps is how many untimed ops each benchmark sends a server before
// measuring (FLOE_PEER_WARMUP, default 200), so a JVM has compiled its
// hot paths before it is timed, as it would have in production.
func warmUps(b *testing.B) int {
	s := os.Getenv("FLOE_PEER_WARMUP")
	if s == "" {
		return 200
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		b.Fatalf("FLOE_PEER_WARMUP=%q: want a count", s)
	}
	return n
}

// forEachServer runs fn as sub-benchmark server=<name> for each server
// whose URL is set, and skips the others.
// peerWarehouse is the root URL of floe's warehouse (FLOE_PEER_WAREHOUSE,
// set by run.sh), under which the workloads put metadata locations: floe
// refuses locations outside it, Nessie checks none.
func peerWarehouse() string {
	if w := os.Getenv("FLOE_PEER_WAREHOUSE"); w != "" {
		return w
	}
	return "file:///peerbench"
}

func forEachServer(b *testing.B, fn func(b *testing.B, serverURL string)) {
	for _, p := range peers() {
		b.Run("server="+p.name, func(b *testing.B) {
			u := os.Getenv(p.env)
			if u == "" {
				b.Skipf("%s is not set: start the servers with conformance/testkit/peerbench/run.sh (make bench)", p.env)
			}
			fn(b, u)
		})
	}
}

func newClient(b *testing.B, serverURL string, conns int) *peerbench.Client {
	c, err := peerbench.NewClient(serverURL, conns)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	if err := c.Config(b.Context()); err != nil {
		b.Fatal(err)
	}
	return c
}

func reportLatency(b *testing.B, st peerbench.Stats) {
	b.ReportMetric(float64(st.Percentile(50).Nanoseconds())/1e3, "p50-us")
	b.ReportMetric(float64(st.Percentile(99).Nanoseconds())/1e3, "p99-us")
}

// BenchmarkCommit: clients each commit a new table key of their own to
// main, one key per commit, expecting the head they last saw.
func BenchmarkCommit(b *testing.B) {
	forEachServer(b, func(b *testing.B, serverURL string) {
		ns := peerbench.UniqueName("peer_commit_")
		warm := newClient(b, serverURL, 4)
		head, err := peerbench.CreateNamespace(b.Context(), warm, ns)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := peerbench.Commits(b.Context(), warm, head, peerWarehouse(), ns, "warm", 4, warmUps(b)); err != nil {
			b.Fatalf("warm-up: %v", err)
		}
		for _, clients := range []int{1, 16} {
			b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
				c := newClient(b, serverURL, clients)
				head, err := c.Reference(b.Context(), "main")
				if err != nil {
					b.Fatal(err)
				}
				prefix := peerbench.UniqueName("t")
				b.ResetTimer()
				st, err := peerbench.Commits(b.Context(), c, head, peerWarehouse(), ns, prefix, clients, b.N)
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(st.PerSecond(), "commits/s")
				reportLatency(b, st)
			})
		}
	})
}

// benchReads times op, one client, after warming the server up with it.
func benchReads(b *testing.B, name string, op func() error) {
	if _, err := peerbench.Repeat(warmUps(b), op); err != nil {
		b.Fatalf("warm-up: %v", err)
	}
	b.Run(name, func(b *testing.B) {
		b.ResetTimer()
		st, err := peerbench.Repeat(b.N, op)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		reportLatency(b, st)
	})
}

// BenchmarkGetReference: GET /api/v2/trees/main.
func BenchmarkGetReference(b *testing.B) {
	forEachServer(b, func(b *testing.B, serverURL string) {
		c := newClient(b, serverURL, 1)
		benchReads(b, "clients=1", func() error {
			ref, err := c.Reference(b.Context(), "main")
			if err == nil && ref.Hash == "" {
				err = fmt.Errorf("main without a hash: %+v", ref)
			}
			return err
		})
	})
}

// BenchmarkListReferences: GET /api/v2/trees (every page) with 256
// branches besides main.
func BenchmarkListReferences(b *testing.B) {
	const refs = 256
	forEachServer(b, func(b *testing.B, serverURL string) {
		c := newClient(b, serverURL, 1)
		if err := peerbench.EnsureBranches(b.Context(), c, "peer_ref_", refs); err != nil {
			b.Fatal(err)
		}
		_, pages, err := c.References(b.Context())
		if err != nil {
			b.Fatal(err)
		}
		if pages > 1 {
			b.Logf("%s answers a listing of %d references in %d pages", serverURL, refs+1, pages)
		}
		benchReads(b, fmt.Sprintf("refs=%d", refs), func() error {
			got, _, err := c.References(b.Context())
			if err == nil && len(got) < refs+1 {
				err = fmt.Errorf("listed %d references, want at least %d", len(got), refs+1)
			}
			return err
		})
	})
}

// BenchmarkGetContents: GET /api/v2/trees/main/contents/{key} of one
// Iceberg table.
func BenchmarkGetContents(b *testing.B) {
	forEachServer(b, func(b *testing.B, serverURL string) {
		c := newClient(b, serverURL, 1)
		ns := peerbench.UniqueName("peer_get_")
		head, err := peerbench.CreateNamespace(b.Context(), c, ns)
		if err != nil {
			b.Fatal(err)
		}
		metadata := peerWarehouse() + "/get/metadata/00001.metadata.json"
		if _, err := c.Commit(b.Context(), "main", head.Hash, "peerbench: table",
			peerbench.Put(peerbench.Table(metadata, 1), ns, "tbl")); err != nil {
			b.Fatal(err)
		}
		benchReads(b, "clients=1", func() error {
			got, err := c.Content(b.Context(), "main", ns, "tbl")
			if err == nil && got.MetadataLocation != metadata {
				err = fmt.Errorf("content %+v, want metadata location %s", got, metadata)
			}
			return err
		})
	})
}
