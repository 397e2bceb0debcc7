package floeapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/mux"

	"github.com/floe-catalog/floe/internal/apidoc"
	"github.com/floe-catalog/floe/rest/floeapi"
	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
	"github.com/floe-catalog/floe/versionstore/storebackup"
)

// TestBackupAndExportWithTheDefaultPolicy: only admins may back up or
// export; an admin's backup restores into a store holding the branch
// created before it, the export imports into one too, and paths that
// exist or are relative are refused in the error model.
func TestBackupAndExportWithTheDefaultPolicy(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	s := securedServer(t, &clock)
	main, err := s.Store.GetRef("main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Store.CreateRef(t.Context(), versionstore.CreateRefRequest{Name: "before-backup", Type: versionstore.Branch, Target: main.Head}); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	backupDir, exportFile := filepath.Join(tmp, "backup"), filepath.Join(tmp, "floe.export")

	for _, c := range []struct {
		path   string
		body   any
		action string
	}{
		{"/admin/backup", apidoc.BackupRequest{Dir: backupDir}, string(floeapi.ActionBackup)},
		{"/admin/export", apidoc.ExportRequest{File: exportFile}, string(floeapi.ActionExport)},
	} {
		status, body := call(t, s, "alice", http.MethodPost, c.path, c.body, nil)
		var eb floeapi.ErrorBody
		if err := json.Unmarshal([]byte(body), &eb); status != http.StatusForbidden || err != nil ||
			!strings.Contains(eb.Error.Message, c.action+" requires group admins") {
			t.Fatalf("alice POST %s: %d %s; want 403 naming %s", c.path, status, body, c.action)
		}
	}
	if _, err := os.Stat(backupDir); !os.IsNotExist(err) {
		t.Fatalf("a refused backup wrote %s: %v", backupDir, err)
	}

	var bk apidoc.BackupReport
	if status, body := call(t, s, "carol", http.MethodPost, "/admin/backup", apidoc.BackupRequest{Dir: backupDir}, &bk); status != http.StatusOK ||
		bk.Dir != backupDir || bk.Files == 0 {
		t.Fatalf("carol's backup: %d %s", status, body)
	}
	var ex apidoc.ExportReport
	if status, body := call(t, s, "carol", http.MethodPost, "/admin/export", apidoc.ExportRequest{File: exportFile, Gzip: true}, &ex); status != http.StatusOK ||
		// The log: main's creation, the policy bundle the server activated
		// at start (a change-feed event entry) and before-backup.
		ex.File != exportFile || ex.Refs != 2 || ex.Log != 3 {
		t.Fatalf("carol's export: %d %s", status, body)
	}
	for _, c := range []struct {
		path   string
		body   string
		status int
	}{
		{"/admin/backup", `{"dir": "` + backupDir + `"}`, http.StatusConflict},
		{"/admin/export", `{"file": "` + exportFile + `"}`, http.StatusConflict},
		{"/admin/backup", `{"dir": "relative/backup"}`, http.StatusBadRequest},
		{"/admin/export", `{"file": "floe.export"}`, http.StatusBadRequest},
		{"/admin/backup", `{}`, http.StatusBadRequest},
		{"/admin/export", `{"file": "/x", "zip": true}`, http.StatusBadRequest},
	} {
		if status, body := call(t, s, "carol", http.MethodPost, c.path, json.RawMessage(c.body), nil); status != c.status ||
			!strings.Contains(body, `"error"`) {
			t.Fatalf("POST %s %s: %d %s; want %d in the error model", c.path, c.body, status, body, c.status)
		}
	}

	restored := filepath.Join(tmp, "restored")
	if rep, err := storebackup.Restore(t.Context(), backupDir, restored); err != nil || rep.Refs != 2 {
		t.Fatalf("restore: %+v %v", rep, err)
	}
	imported := filepath.Join(tmp, "imported")
	if _, err := storebackup.ImportDir(t.Context(), exportFile, imported); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{restored, imported} {
		be, err := pebblebackend.Open(dir, pebblebackend.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := be.GetRef(t.Context(), "before-backup"); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if err := be.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestExportOutlivesTheWriteTimeout serves the API with a write timeout far
// shorter than an export (a checkpoint, reopening it, writing the file):
// the answer still arrives, because the export lifts its write deadline.
func TestExportOutlivesTheWriteTimeout(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "data")
	be, err := pebblebackend.Open(dataDir, pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := versionstore.Open(t.Context(), be, versionstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	api, err := floeapi.New(floeapi.Deps{Store: store, Backups: storebackup.New(be, dataDir)})
	if err != nil {
		t.Fatal(err)
	}
	r := mux.NewRouter()
	api.Register(r, nil)
	srv := httptest.NewUnstartedServer(r)
	srv.Config.WriteTimeout = time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)

	file := filepath.Join(t.TempDir(), "floe.export")
	body := strings.NewReader(`{"file": "` + file + `"}`)
	resp, err := http.Post(srv.URL+floeapi.Prefix+"/admin/export", "application/json", body)
	if err != nil {
		t.Fatalf("export behind a 1ms write timeout: %v", err)
	}
	defer resp.Body.Close()
	var rep apidoc.ExportReport
	if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil || resp.StatusCode != http.StatusOK || rep.File != file {
		t.Fatalf("export: %d %+v %v", resp.StatusCode, rep, err)
	}
	if rep.DurationSeconds < 0.001 {
		t.Skipf("the export took %.4fs, within the write timeout: nothing shown", rep.DurationSeconds)
	}
}
