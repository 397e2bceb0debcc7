package gc

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestStaleMarksRemoved: a run removes the mark databases runs killed
// before closing them left behind, and never one a run still holds or one
// that may be about to be opened.
func TestStaleMarksRemoved(t *testing.T) {
	tmp := t.TempDir()
	old := time.Now().Add(-time.Hour)
	mk := func(name string, age time.Time) string {
		dir := filepath.Join(tmp, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "000001.sst"), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(dir, age, age); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	killed := mk("floe-gc-marks-killed", old)
	held := mk("floe-gc-marks-held", old)
	young := mk("floe-gc-marks-young", time.Now())
	other := mk("not-gc", old)
	lock, err := vfs.Default.Lock(filepath.Join(held, "LOCK"))
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := os.Chtimes(held, old, old); err != nil { // the lock file touched it
		t.Fatal(err)
	}

	m, err := openMarks(tmp)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	if _, err := os.Stat(killed); !os.IsNotExist(err) {
		t.Errorf("the killed run's mark database is still there: %v", err)
	}
	for _, dir := range []string{held, young, other} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s removed: %v", filepath.Base(dir), err)
		}
	}
}
