package assemble_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/server/assemble"
)

// diskSwitch is an errorfs.Injector over the store's disk that the test
// turns faulty and back: full (ENOSPC on every write of file data), or its
// directory unwritable (EACCES on creating, renaming, linking and removing
// entries; open files keep taking writes).
type diskSwitch struct {
	full, unwritable atomic.Bool
}

func (d *diskSwitch) MaybeError(op errorfs.Op) error {
	switch {
	case d.full.Load() && (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt):
		return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
	case d.unwritable.Load():
		switch op.Kind {
		case errorfs.OpCreate, errorfs.OpLink, errorfs.OpRename, errorfs.OpReuseForWrite,
			errorfs.OpMkdirAll, errorfs.OpRemove, errorfs.OpRemoveAll:
			return &os.PathError{Op: "open", Path: op.Path, Err: syscall.EACCES}
		}
	}
	return nil
}

func (d *diskSwitch) String() string { return "disk switch" }

func TestFullDiskAnswersRetryableAndRecovers(t *testing.T) {
	diskFaultAnswersRetryableAndRecovers(t, func(d *diskSwitch, on bool) { d.full.Store(on) }, "no space left on device", 0)
}

// TestUnwritableDataDirAnswersRetryableAndRecovers is the same with the data
// directory turned unwritable, which killed the process when Pebble had to
// create its next WAL (issue 32): the write in flight carries 1 MiB, more
// than the first memtable holds, so it makes Pebble rotate the WAL.
func TestUnwritableDataDirAnswersRetryableAndRecovers(t *testing.T) {
	diskFaultAnswersRetryableAndRecovers(t, func(d *diskSwitch, on bool) { d.unwritable.Store(on) }, "permission denied", 1<<20)
}

// diskFaultAnswersRetryableAndRecovers fills the store's disk under a
// real server (or makes its directory unwritable): every API refuses writes with its own retryable 503 (the
// Iceberg commit is a ServiceUnavailableException, not the 500 a client
// reads as "commit state unknown"), /readyz turns 503 with the cause while
// /healthz stays 200, the metrics say so, and once space is back the write
// in flight completes and new writes succeed without a restart. After a
// restart every acknowledged write is there.
func diskFaultAnswersRetryableAndRecovers(t *testing.T, fault func(*diskSwitch, bool), cause string, inflightPad int) {
	dir := t.TempDir()
	var disk diskSwitch
	s := testserver.Start(t, testserver.Options{Dir: dir, StoreFS: errorfs.Wrap(vfs.Default, &disk)})
	client := &http.Client{Timeout: time.Minute}
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	createNamespace := func(name string) (int, string) {
		return do(http.MethodPost, "/v1/lake/namespaces", fmt.Sprintf(`{"namespace":[%q]}`, name))
	}
	const schema = `{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}`
	createTable := func(ns, name string) (int, string) {
		return do(http.MethodPost, "/v1/lake/namespaces/"+ns+"/tables", fmt.Sprintf(`{"name":%q,"schema":%s}`, name, schema))
	}
	metric := func(name string) string {
		t.Helper()
		_, body := do(http.MethodGet, "/metrics", "")
		m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("/metrics has no %s", name)
		}
		return m[1]
	}

	var acked []string
	for i := range 5 {
		name := fmt.Sprintf("ns%d", i)
		if st, body := createNamespace(name); st != http.StatusOK {
			t.Fatalf("create namespace %s: %d %s", name, st, body)
		}
		acked = append(acked, name)
	}
	if st, body := createTable("ns0", "before"); st != http.StatusOK {
		t.Fatalf("create table: %d %s", st, body)
	}

	fault(&disk, true)
	// The first write to meet the fault is in flight: it waits for the
	// disk, and is acknowledged once the disk takes it.
	inflight := make(chan int, 1)
	go func() {
		st, _ := do(http.MethodPost, "/v1/lake/namespaces",
			fmt.Sprintf(`{"namespace":["inflight"],"properties":{"pad":%q}}`, strings.Repeat("p", inflightPad)))
		inflight <- st
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, body := do(http.MethodGet, "/readyz", "")
		if st == http.StatusServiceUnavailable {
			if !strings.Contains(body, cause) {
				t.Fatalf("/readyz: %s, want the cause", body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d %s with the disk full", st, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st, body := do(http.MethodGet, "/healthz", ""); st != http.StatusOK {
		t.Fatalf("/healthz with the disk full: %d %s, want 200: a full disk must not get the process restarted", st, body)
	}

	// Each API refuses writes in its own error model, retryable.
	var iceberg struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	st, body := createTable("ns0", "during")
	if err := json.Unmarshal([]byte(body), &iceberg); err != nil || st != http.StatusServiceUnavailable ||
		iceberg.Error.Type != "ServiceUnavailableException" || !strings.Contains(iceberg.Error.Message, cause) {
		t.Fatalf("Iceberg create table with the disk full: %d %s, want 503 ServiceUnavailableException with the cause", st, body)
	}
	if st, body := createNamespace("during"); st != http.StatusServiceUnavailable || !strings.Contains(body, "ServiceUnavailableException") {
		t.Fatalf("Iceberg create namespace with the disk full: %d %s", st, body)
	}
	var nessie struct {
		Status    int    `json:"status"`
		ErrorCode string `json:"errorCode"`
		Message   string `json:"message"`
	}
	_, mainRef := do(http.MethodGet, "/api/v2/trees/main", "")
	var ref struct {
		Reference struct {
			Hash string `json:"hash"`
		} `json:"reference"`
	}
	if err := json.Unmarshal([]byte(mainRef), &ref); err != nil || ref.Reference.Hash == "" {
		t.Fatalf("Nessie read of main with the disk full: %s", mainRef)
	}
	st, body = do(http.MethodPost, "/api/v2/trees?name=during&type=BRANCH", fmt.Sprintf(`{"type":"BRANCH","name":"main","hash":%q}`, ref.Reference.Hash))
	if err := json.Unmarshal([]byte(body), &nessie); err != nil || st != http.StatusServiceUnavailable ||
		nessie.Status != http.StatusServiceUnavailable || nessie.ErrorCode != "SERVICE_UNAVAILABLE" || !strings.Contains(nessie.Message, cause) {
		t.Fatalf("Nessie create branch with the disk full: %d %s, want 503 SERVICE_UNAVAILABLE with the cause", st, body)
	}
	var floe struct {
		Error struct {
			Status  int    `json:"status"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	st, body = do(http.MethodPut, "/api/floe/v1/refs/main/retention", `{"keepCommits":10}`)
	if err := json.Unmarshal([]byte(body), &floe); err != nil || st != http.StatusServiceUnavailable ||
		floe.Error.Code != "SERVICE_UNAVAILABLE" || !strings.Contains(floe.Error.Message, cause) {
		t.Fatalf("floe API write with the disk full: %d %s, want 503 SERVICE_UNAVAILABLE with the cause", st, body)
	}
	if got := metric("floe_versionstore_writable"); got != "0" {
		t.Errorf("floe_versionstore_writable = %s with the disk full, want 0", got)
	}
	if got := metric("floe_versionstore_unavailable_writes_total"); got == "0" {
		t.Errorf("floe_versionstore_unavailable_writes_total = 0 after refused writes")
	}
	if got := metric("floe_versionstore_disk_refusals_total"); got == "0" {
		t.Errorf("floe_versionstore_disk_refusals_total = 0 with the disk refusing writes")
	}
	// The refused table left no metadata file behind in the warehouse.
	if matches, _ := filepath.Glob(filepath.Join(s.WarehouseDir, "ns0", "during*", "metadata", "*.json")); len(matches) != 0 {
		t.Errorf("the refused create left metadata files: %v", matches)
	}

	fault(&disk, false)
	if st := <-inflight; st != http.StatusOK {
		t.Fatalf("the write in flight when the disk filled: %d, want 200 once space is back", st)
	}
	acked = append(acked, "inflight")
	if st, body := do(http.MethodGet, "/readyz", ""); st != http.StatusOK {
		t.Fatalf("/readyz after space is back: %d %s", st, body)
	}
	if st, body := createTable("ns0", "after"); st != http.StatusOK {
		t.Fatalf("create table after space is back: %d %s", st, body)
	}
	if st, body := createNamespace("after"); st != http.StatusOK {
		t.Fatalf("create namespace after space is back: %d %s", st, body)
	}
	acked = append(acked, "after")
	if got := metric("floe_versionstore_writable"); got != "1" {
		t.Errorf("floe_versionstore_writable = %s after space is back, want 1", got)
	}

	// A restart on the plain disk finds every acknowledged write.
	s.Stop()
	s = testserver.Start(t, testserver.Options{Dir: dir})
	_, body = do(http.MethodGet, "/v1/lake/namespaces", "")
	for _, ns := range acked {
		if !strings.Contains(body, `["`+ns+`"]`) {
			t.Errorf("after restart, namespace %s is missing: %s", ns, body)
		}
	}
	if strings.Contains(body, `["during"]`) {
		t.Errorf("after restart, the refused namespace exists: %s", body)
	}
	_, body = do(http.MethodGet, "/v1/lake/namespaces/ns0/tables", "")
	for _, tbl := range []string{"before", "after"} {
		if !strings.Contains(body, `"`+tbl+`"`) {
			t.Errorf("after restart, table ns0.%s is missing: %s", tbl, body)
		}
	}
	if strings.Contains(body, `"during"`) {
		t.Errorf("after restart, the refused table exists: %s", body)
	}
}

// nearlyFullDisk reports 3 MiB free on the real disk.
type nearlyFullDisk struct{ vfs.FS }

func (nearlyFullDisk) GetDiskUsage(string) (vfs.DiskUsage, error) {
	return vfs.DiskUsage{AvailBytes: 3 << 20, TotalBytes: 1 << 30, UsedBytes: 1<<30 - 3<<20}, nil
}

// TestStartOnAFullDiskFailsFast: started on a full disk (or in a data
// directory it cannot write), floe does not come up half way with Pebble
// retrying a flush in a loop, as issue 32 saw: Run fails at once with one
// line that says why, and nothing listens.
func TestStartOnAFullDiskFailsFast(t *testing.T) {
	for _, tc := range []struct {
		name string
		fs   vfs.FS
		want string
	}{
		{"full disk", nearlyFullDisk{vfs.Default}, "the disk holding the store has 3 MiB free, and the store needs 64 MiB to start"},
		{"unwritable data directory", func() vfs.FS {
			var d diskSwitch
			d.unwritable.Store(true)
			return errorfs.Wrap(vfs.Default, &d)
		}(), "the store cannot write in its directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(t.TempDir())
			start := time.Now()
			err := assemble.Run(t.Context(), cfg, assemble.Deps{StoreFS: tc.fs}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("Run = %v, want one line containing %q", err, tc.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("Run took %v to fail", d)
			}
			reopen(t, cfg.DataDir)
		})
	}
}
