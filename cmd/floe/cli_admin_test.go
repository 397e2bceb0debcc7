package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIAdminBackupExport drives `floe admin` against a real `floe
// serve`: a backup and an export taken from the running server restore
// and import into new data directories, each of which a new `floe serve`
// opens with the branch made before; the refusals name what is wrong.
func TestCLIAdminBackupExport(t *testing.T) {
	e := newCLIEnv(t)
	e.ok(t, "branch", "create", "etl")
	tmp := t.TempDir()
	backup, file := filepath.Join(tmp, "backup"), filepath.Join(tmp, "floe.export.gz")

	e.fails(t, []string{"admin", "backup", "relative/dir"}, "absolute path", "server's machine")
	if out := e.ok(t, "admin", "backup", backup); !strings.Contains(out, "backed up into "+backup) {
		t.Fatalf("floe admin backup: %s", out)
	}
	e.fails(t, []string{"admin", "backup", backup}, "already exists")
	if out := e.ok(t, "admin", "export", "--gzip", file); !strings.Contains(out, "2 references") {
		t.Fatalf("floe admin export: %s", out)
	}

	restored, imported := filepath.Join(tmp, "restored"), filepath.Join(tmp, "imported")
	if out := e.ok(t, "admin", "restore", backup, restored); !strings.Contains(out, "2 references") {
		t.Fatalf("floe admin restore: %s", out)
	}
	e.fails(t, []string{"admin", "restore", backup, restored}, "not empty")
	e.fails(t, []string{"admin", "import", file}, "--data-dir is required")
	if out := e.ok(t, "admin", "import", file, "--data-dir", imported); !strings.Contains(out, "2 references") {
		t.Fatalf("floe admin import: %s", out)
	}
	e.fails(t, []string{"admin", "import", file, "--data-dir", imported}, "not empty")
	again := filepath.Join(tmp, "again.export")
	if out := e.ok(t, "admin", "export", "--data-dir", imported, again); !strings.Contains(out, "exported to "+again) {
		t.Fatalf("floe admin export --data-dir: %s", out)
	}

	for _, dir := range []string{restored, imported} {
		p := startServe(t, nil, "--addr", "127.0.0.1:0", "--data-dir", dir, "--warehouse", filepath.Join(tmp, "warehouse"))
		if out, errOut, code := runFloe(t, []string{"FLOE_SERVER=http://" + p.addr}, "branch", "list"); code != 0 || !strings.Contains(out, "etl") {
			t.Fatalf("floe branch list on %s: exit %d %s %s", dir, code, out, errOut)
		}
	}
}
