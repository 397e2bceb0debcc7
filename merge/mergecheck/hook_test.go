package mergecheck_test

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go/catalog/rest"

	"github.com/floe-catalog/floe/merge/mergecheck"
)

// hookServer is an external data-quality check on a real loopback
// server, written as a check author would: it verifies the signature,
// opens the catalog at the payload's warehouse (lake@<candidate>) with
// iceberg-go, and counts the rows of each touched table there.
type hookServer struct {
	srv *httptest.Server
	mu  sync.Mutex
	// seen are the payloads received, by check.
	seen map[string][]mergecheck.WebhookPayload
}

const hookSecret = "s3cr3t"

// maxRows is the rowcount check's limit per table.
const maxRows = 10

func startHookServer(t *testing.T) *hookServer {
	h := &hookServer{seen: map[string][]mergecheck.WebhookPayload{}}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !mergecheck.VerifySignature(hookSecret, body, r.Header.Get(mergecheck.SignatureHeader)) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var p mergecheck.WebhookPayload
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.seen[p.Check] = append(h.seen[p.Check], p)
		h.mu.Unlock()
		passed, reason := h.rowcount(r, p)
		_ = json.NewEncoder(w).Encode(map[string]any{"passed": passed, "reason": reason})
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookServer) checks() []mergecheck.ExternalCheck {
	return []mergecheck.ExternalCheck{{Name: "rowcount", URL: h.srv.URL + "/rowcount", Secret: hookSecret}}
}

func (h *hookServer) rowcount(r *http.Request, p mergecheck.WebhookPayload) (bool, string) {
	ctx := r.Context()
	cat, err := rest.NewCatalog(ctx, "floe", p.CatalogURI, rest.WithWarehouseLocation(p.Warehouse))
	if err != nil {
		return false, err.Error()
	}
	defer cat.Close()
	tables := map[string][]string{}
	for _, tp := range p.Partitions {
		tables[tp.Table] = tp.Key
	}
	var notes []string
	passed := true
	for _, t := range sortedNames(tables) {
		tbl, err := cat.LoadTable(ctx, tables[t])
		if err != nil {
			return false, fmt.Sprintf("load %s at %s: %v", t, p.Warehouse, err)
		}
		rows, err := tbl.Scan().ToArrowTable(ctx)
		if err != nil {
			return false, fmt.Sprintf("scan %s: %v", t, err)
		}
		n := rows.NumRows()
		rows.Release()
		if n > maxRows {
			passed = false
		}
		notes = append(notes, fmt.Sprintf("%s has %d rows (limit %d)", t, n, maxRows))
	}
	return passed, strings.Join(notes, "; ")
}

func sortedNames(m map[string][]string) []string { return slices.Sorted(maps.Keys(m)) }
