package mergeengine_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/unwritable"
	"github.com/floe-catalog/floe/rest/floeapi"
)

// TestUnwritableWarehouseIsAFault: with the warehouse refusing new files,
// a merge that must write a table's new metadata fails as a fault, not a
// refusal: the Nessie API answers 5xx in its error model (never 409
// REFERENCE_CONFLICT, which says the merge can never happen as it is),
// to a merge and to a transplant, floe's merge plan answers 5xx too, nothing is written (no file, no
// commit), and once the warehouse takes files again the same merge lands.
func TestUnwritableWarehouseIsAFault(t *testing.T) {
	d := newScenario(t)
	for _, l := range []string{
		"table table=ns.t",
		"branch etl",
		"append on=etl table=ns.t day=2026-08-20 rows=2",
		"append table=ns.t day=2026-08-21 rows=1",
	} {
		d.run(t, directive(l))
	}
	before := warehouseFiles(t, d.srv.WarehouseDir)
	head, _ := d.srv.Store.GetRef("main")
	src, _ := d.srv.Store.GetRef("etl")
	restore := unwritable.Make(t, d.srv.WarehouseDir)

	body := map[string]any{"fromRefName": "etl", "fromHash": src.Head.String()}
	status, answer := postJSON(t, d.srv.URL+"/api/v2/trees/main@"+head.Head.String()+"/history/merge", body)
	var nessieErr struct {
		Status    int    `json:"status"`
		ErrorCode string `json:"errorCode"`
		Message   string `json:"message"`
	}
	if err := json.Unmarshal(answer, &nessieErr); err != nil {
		t.Fatalf("nessie merge: %d %s: %v", status, answer, err)
	}
	if status < 500 || nessieErr.Status != status || nessieErr.ErrorCode == "REFERENCE_CONFLICT" ||
		!strings.Contains(nessieErr.Message, "could not be read or written") || !strings.Contains(nessieErr.Message, "not permitted") &&
		!strings.Contains(nessieErr.Message, "permission denied") {
		t.Fatalf("nessie merge with an unwritable warehouse: %d %s", status, answer)
	}

	status, answer = postJSON(t, d.srv.URL+"/api/v2/trees/main@"+head.Head.String()+"/history/transplant",
		map[string]any{"fromRefName": "etl", "hashesToTransplant": []string{src.Head.String()}})
	if status < 500 || !strings.Contains(string(answer), "could not be read or written") {
		t.Fatalf("nessie transplant with an unwritable warehouse: %d %s", status, answer)
	}

	status, answer = postJSON(t, d.srv.URL+floeapi.Prefix+"/merge-plans", map[string]any{"source": "etl", "target": "main"})
	if status < 500 || !strings.Contains(string(answer), "could not be read or written") {
		t.Fatalf("merge plan with an unwritable warehouse: %d %s", status, answer)
	}

	if now, _ := d.srv.Store.GetRef("main"); now.Head != head.Head {
		t.Fatalf("main moved from %s to %s", head.Head, now.Head)
	}
	if after := warehouseFiles(t, d.srv.WarehouseDir); !slices.Equal(before, after) {
		t.Fatalf("the failed merge left files:\nbefore %v\nafter  %v", before, after)
	}

	restore()
	if got := d.run(t, directive("merge source=etl target=main")); got != "200 merged: one commit with 2 parents\n" {
		t.Fatalf("merge once the warehouse is writable: %s", got)
	}
	if got, want := d.scanRows(t, directive("rows table=ns.t")), "2026-08-20: 1 2\n2026-08-21: 3\n"; got != want {
		t.Fatalf("rows:\n%s\nwant:\n%s", got, want)
	}
}

func postJSON(t *testing.T, url string, body any) (int, []byte) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// warehouseFiles lists the files under dir, relative to it, sorted.
func warehouseFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	if err != nil {
		t.Fatal(fmt.Errorf("list the warehouse: %w", err))
	}
	slices.Sort(out)
	return out
}
