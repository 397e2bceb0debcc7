package replicas

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
)

// BenchmarkIcebergCommits is Iceberg REST commits (iceberg-go appends of a
// few rows, each its own table) from 32 clients, through one floe server
// on Pebble, one on PostgreSQL, and three replicas on PostgreSQL with the
// clients spread across them. The clients, the servers and PostgreSQL
// share the machine, so this measures the whole path, client included.
func BenchmarkIcebergCommits(b *testing.B) {
	const clients = 32
	for _, tc := range []struct {
		name     string
		replicas int
		postgres bool
	}{
		{"pebble", 1, false},
		{"postgres-replicas=1", 1, true},
		{"postgres-replicas=3", 3, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var l *lake
			if tc.postgres {
				l = newLake(b, tc.replicas)
			} else {
				pgtest.Need(b, cluster) // the same package setup as the others
				l = newLakeOn(b, "", 1)
			}
			ctx := b.Context()
			if err := l.catalog(0).CreateNamespace(ctx, catalog.ToIdentifier("db"), nil); err != nil {
				b.Fatal(err)
			}
			cats := make([]*rest.Catalog, clients)
			for c := range clients {
				cats[c] = l.catalog(c)
				if err := l.createTable(cats[c], "db", fmt.Sprintf("t%02d", c)); err != nil {
					b.Fatal(err)
				}
			}
			var (
				next atomic.Int64
				wg   sync.WaitGroup
				mu   sync.Mutex
				lat  []time.Duration
			)
			b.ResetTimer()
			for c := range clients {
				wg.Go(func() {
					id := catalog.ToIdentifier("db", fmt.Sprintf("t%02d", c))
					for i := int64(0); next.Add(1) <= int64(b.N); i++ {
						start := time.Now()
						if _, err := appendIDs(context.Background(), cats[c], id, seq(i*4, 4)); err != nil {
							b.Error(err)
							return
						}
						d := time.Since(start)
						mu.Lock()
						lat = append(lat, d)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
			if len(lat) > 0 {
				slices.Sort(lat)
				b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
				b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds()), "p99-us")
			}
		})
	}
}
