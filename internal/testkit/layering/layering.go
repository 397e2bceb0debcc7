package layering

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// BelowAPIs fails t if the package in the current directory (a test's
// working directory is its package's) imports net/http itself, or depends
// on any rest/ package, directly or not. Its dependencies may import
// net/http (the AWS SDK does).
func BelowAPIs(t *testing.T) {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkg struct {
		ImportPath string
		Imports    []string
		Deps       []string
	}
	if err := json.Unmarshal(out, &pkg); err != nil {
		t.Fatalf("go list output: %v", err)
	}
	if len(pkg.Imports) == 0 || len(pkg.Deps) == 0 {
		t.Fatalf("go list reported no imports for %s", pkg.ImportPath)
	}
	if slices.Contains(pkg.Imports, "net/http") {
		t.Errorf("%s imports net/http", pkg.ImportPath)
	}
	const rest = "github.com/floe-catalog/floe/rest"
	for _, d := range pkg.Deps {
		if d == rest || strings.HasPrefix(d, rest+"/") {
			t.Errorf("%s depends on %s", pkg.ImportPath, d)
		}
	}
}
