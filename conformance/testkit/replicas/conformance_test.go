package replicas

import (
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/catalogtest"
	"github.com/apache/iceberg-go/catalog/rest"
)

// roundRobin serves one address in front of the replicas and sends each
// request to the next one, so consecutive requests of one client (a
// create, then the load of what it created) land on different replicas,
// as behind a load balancer without affinity.
func (l *lake) roundRobin(t *testing.T) string {
	t.Helper()
	var targets []*url.URL
	for _, r := range l.replicas {
		u, err := url.Parse(r.URL)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, u)
	}
	var next atomic.Uint64
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(targets[next.Add(1)%uint64(len(targets))])
		pr.Out.Host = pr.In.Host
	}}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestCatalogConformanceAcrossReplicas runs iceberg-go's catalog
// conformance suite against three replicas over one PostgreSQL database,
// every request going to another replica than the one before: each
// replica reads what another just wrote.
func TestCatalogConformanceAcrossReplicas(t *testing.T) {
	l := newLake(t, 3)
	addr := l.roundRobin(t)
	catalogtest.RunCatalogTests(t, catalogtest.Config{
		NewCatalog: func(t *testing.T) catalog.Catalog {
			c, err := rest.NewCatalog(t.Context(), "floe", addr, rest.WithWarehouseLocation("lake"))
			if err != nil {
				t.Fatal(err)
			}
			return c
		},
		SupportsNamespaceProperties: true,
	})
}
