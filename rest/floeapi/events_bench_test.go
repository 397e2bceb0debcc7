package floeapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/rest/floeapi"
	"github.com/floe-catalog/floe/versionstore"
)

// BenchmarkEventsHTTP measures the events per second one consumer reads
// through GET /events, in pages of 1000 as JSON over loopback HTTP,
// catching up from the beginning on a history of 4000 namespace commits
// (8000 events). The feed keeps the events of its newest 1024 entries, so
// each pass derives most of them anew, as a consumer far behind does.
func BenchmarkEventsHTTP(b *testing.B) {
	s := testserver.Start(b, testserver.Options{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < 4000; i += 8 {
				r, err := s.Store.GetRef("main")
				if err != nil {
					b.Error(err)
					return
				}
				if _, err := s.Store.Commit(b.Context(), versionstore.CommitRequest{Branch: "main", Expected: r.Head, Committer: "bench",
					Operations: []versionstore.Operation{{Kind: versionstore.OpPut, Key: versionstore.ContentKey{fmt.Sprint("ns", i)},
						Content: &versionstore.Content{Type: versionstore.Namespace}}}}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	readAll := func(b *testing.B) int {
		n, after := 0, ""
		for {
			resp, err := http.Get(s.URL + floeapi.Prefix + "/events?limit=1000&after=" + after)
			if err != nil {
				b.Fatal(err)
			}
			var page struct {
				Events []json.RawMessage
				Next   string
			}
			err = json.NewDecoder(resp.Body).Decode(&page)
			resp.Body.Close()
			if err != nil {
				b.Fatal(err)
			}
			if len(page.Events) == 0 {
				return n
			}
			n += len(page.Events)
			after = page.Next
		}
	}
	b.Run("catch-up", func(b *testing.B) {
		var n int
		for b.Loop() {
			n = readAll(b)
		}
		b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		b.ReportMetric(float64(n), "events")
	})
}
