package mergecheck

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// TestImports holds the package to its place: below the APIs and the
// merge queue (net/http only as the webhooks' client), and away from the
// policy engine's internals.
func TestImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkg struct{ Imports, Deps []string }
	if err := json.Unmarshal(out, &pkg); err != nil {
		t.Fatal(err)
	}
	if len(pkg.Deps) == 0 {
		t.Fatal("go list reported no dependencies")
	}
	const floe = "github.com/floe-catalog/floe/"
	for _, d := range pkg.Deps {
		for _, banned := range []string{"rest", "server", "merge/mergequeue", "policy", "cmd"} {
			if d == floe+banned || strings.HasPrefix(d, floe+banned+"/") {
				t.Errorf("mergecheck depends on %s", d)
			}
		}
	}
}
