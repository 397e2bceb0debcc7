package storebackup

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/floe-catalog/floe/versionstore"
	"github.com/floe-catalog/floe/versionstore/pebblebackend"
	"github.com/floe-catalog/floe/versionstore/storeexport"
	"github.com/floe-catalog/floe/versionstore/storeexport/exporttest"
)

// running is a store open on a data directory, as a server has it.
type running struct {
	dir   string
	be    *pebblebackend.Backend
	store *versionstore.Store
	svc   *Service
}

func open(t *testing.T) *running {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	be, err := pebblebackend.Open(dir, pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := versionstore.Open(t.Context(), be, versionstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	exporttest.Populate(t, s)
	return &running{dir: dir, be: be, store: s, svc: New(be, dir)}
}

// openStore opens the store in dir for reading; it is closed with the test.
func openStore(t *testing.T, dir string) (*versionstore.Store, *pebblebackend.Backend) {
	t.Helper()
	be, err := pebblebackend.Open(dir, pebblebackend.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := versionstore.Open(t.Context(), be, versionstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, be
}

// waitFor waits until the load has acknowledged n more commits than it had.
func waitFor(t *testing.T, load *exporttest.Load, n int) {
	t.Helper()
	want := len(load.Acked()) + n
	for len(load.Acked()) < want {
		time.Sleep(5 * time.Millisecond) // polling a condition, not a timed assertion
	}
}

// TestBackupUnderLoadHoldsEveryAcknowledgedCommit takes backups while six
// writers commit on three branches, restores each into an empty data
// directory and finds, in the restored store, every commit acknowledged
// before its backup began, and every reference's tree readable. The
// commits acknowledged after the last backup are not all there, which
// shows the backups were taken while the writes went on.
func TestBackupUnderLoadHoldsEveryAcknowledgedCommit(t *testing.T) {
	r := open(t)
	load := exporttest.StartLoad(t, r.store, "load/a", "load/b", "load/c")
	type taken struct {
		dir   string
		acked []exporttest.Acked
	}
	var backups []taken
	for i := range 3 {
		waitFor(t, load, 60)
		acked := load.Acked()
		dir := filepath.Join(t.TempDir(), "backup", "b"+string(rune('0'+i)))
		rep, err := r.svc.Backup(t.Context(), dir)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Files == 0 || rep.Bytes == 0 || rep.Dir != dir {
			t.Fatalf("backup report %+v", rep)
		}
		backups = append(backups, taken{dir, acked})
	}
	waitFor(t, load, 60)
	load.Stop(t)
	all := load.Acked()

	for i, b := range backups {
		dataDir := filepath.Join(t.TempDir(), "restored")
		rep, err := Restore(t.Context(), b.dir, dataDir)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Refs != 6 { // main, dev, v1 and the three load branches
			t.Fatalf("restore report %+v", rep)
		}
		s, _ := openStore(t, dataDir)
		exporttest.CheckAcked(t, s, b.acked)
		if i == len(backups)-1 && len(exporttest.Missing(t, s, all)) == 0 {
			t.Fatalf("the last backup holds all %d commits acknowledged after it too", len(all))
		}
	}
	// The backups were only read: each restores again.
	if _, err := Restore(t.Context(), backups[0].dir, filepath.Join(t.TempDir(), "again")); err != nil {
		t.Fatal(err)
	}
}

// TestExportUnderLoad exports the running store while writers commit:
// the file imports into a new Pebble directory holding every commit
// acknowledged before the export began. The export reads a checkpoint,
// which is what makes it one consistent state; an export of a backup taken
// under the same load imports into a store identical to that backup.
func TestExportUnderLoad(t *testing.T) {
	r := open(t)
	load := exporttest.StartLoad(t, r.store, "load/a", "load/b")
	waitFor(t, load, 60)
	acked := load.Acked()
	file := filepath.Join(t.TempDir(), "floe.export.gz")
	rep, err := r.svc.Export(t.Context(), file, storeexport.ExportOptions{Gzip: true})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, load, 20)
	backup := filepath.Join(t.TempDir(), "backup")
	if _, err := r.svc.Backup(t.Context(), backup); err != nil {
		t.Fatal(err)
	}
	waitFor(t, load, 20)
	load.Stop(t)
	if info, err := os.Stat(file); err != nil || info.Size() != rep.FileBytes || rep.Refs != 5 {
		t.Fatalf("export report %+v, file %v %v", rep, info, err)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(r.dir, exportTempPattern)); len(leftovers) > 0 {
		t.Fatalf("the export left its checkpoint behind: %v", leftovers)
	}

	imported := filepath.Join(t.TempDir(), "imported")
	if _, err := ImportDir(t.Context(), file, imported); err != nil {
		t.Fatal(err)
	}
	s, _ := openStore(t, imported)
	exporttest.CheckAcked(t, s, acked)

	// Backup → export → import gives the backup's exact content.
	restored := filepath.Join(t.TempDir(), "restored")
	if _, err := Restore(t.Context(), backup, restored); err != nil {
		t.Fatal(err)
	}
	file2 := filepath.Join(t.TempDir(), "backup.export")
	if _, err := ExportDir(t.Context(), restored, file2, storeexport.ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	imported2 := filepath.Join(t.TempDir(), "imported2")
	if _, err := ImportDir(t.Context(), file2, imported2); err != nil {
		t.Fatal(err)
	}
	_, want := openStore(t, restored)
	_, got := openStore(t, imported2)
	if err := storeexport.Compare(t.Context(), want, got); err != nil {
		t.Fatal(err)
	}
}

// TestRefusals: nothing is overwritten, nothing restores into a non-empty
// directory, a directory without a store is no backup, and a failed import
// leaves no data directory behind.
func TestRefusals(t *testing.T) {
	r := open(t)
	tmp := t.TempDir()
	if _, err := r.svc.Backup(t.Context(), tmp); !errors.Is(err, ErrExists) {
		t.Fatalf("backup into an existing directory: %v", err)
	}
	if _, err := r.svc.Backup(t.Context(), "relative/dir"); !errors.Is(err, ErrNotAbsolute) {
		t.Fatalf("backup into a relative path: %v", err)
	}
	existing := filepath.Join(tmp, "file")
	if err := os.WriteFile(existing, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.svc.Export(t.Context(), existing, storeexport.ExportOptions{}); !errors.Is(err, ErrExists) {
		t.Fatalf("export onto an existing file: %v", err)
	}
	backup := filepath.Join(tmp, "backup")
	if _, err := r.svc.Backup(t.Context(), backup); err != nil {
		t.Fatal(err)
	}
	if _, err := Restore(t.Context(), backup, tmp); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("restore into a non-empty directory: %v", err)
	}
	if _, err := Restore(t.Context(), t.TempDir(), filepath.Join(tmp, "x")); !errors.Is(err, ErrNotBackup) {
		t.Fatalf("restore of an empty directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused restore created its target: %v", err)
	}
	if _, err := ImportDir(t.Context(), existing, filepath.Join(tmp, "y")); !errors.Is(err, storeexport.ErrFormat) {
		t.Fatalf("import of a file that is no export: %v", err)
	}
	if _, err := os.Stat(filepath.Join(tmp, "y")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed import left its data directory: %v", err)
	}
	if _, err := ImportDir(t.Context(), existing, r.dir); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("import into a store's data directory: %v", err)
	}
}
