package tablemerge_test

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestImports keeps the package below the APIs: it must not import
// net/http itself (its dependencies, such as the AWS SDK, may), nor
// depend on any rest/ package, directly or not.
func TestImports(t *testing.T) {
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
