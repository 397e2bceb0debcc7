package layering

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/floe-catalog/floe"

// pkgImports is what `go list` says of the package in the current
// directory: its direct imports and every dependency.
type pkgImports struct {
	ImportPath string
	Imports    []string
	Deps       []string
}

func list(t *testing.T) pkgImports {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkg pkgImports
	if err := json.Unmarshal(out, &pkg); err != nil {
		t.Fatalf("go list output: %v", err)
	}
	if len(pkg.Imports) == 0 || len(pkg.Deps) == 0 {
		t.Fatalf("go list reported no imports for %s", pkg.ImportPath)
	}
	return pkg
}

// BelowAPIs fails t if the package in the current directory (a test's
// working directory is its package's) imports net/http itself, or depends
// on any rest/ package, directly or not. Its dependencies may import
// net/http (the AWS SDK does).
func BelowAPIs(t *testing.T) {
	t.Helper()
	pkg := list(t)
	if slices.Contains(pkg.Imports, "net/http") {
		t.Errorf("%s imports net/http", pkg.ImportPath)
	}
	notBelow(t, pkg, module+"/rest")
}

// BelowServer fails t if the package in the current directory depends on
// any server/ package (the HTTP server, the composition root), directly
// or not.
func BelowServer(t *testing.T) {
	t.Helper()
	notBelow(t, list(t), module+"/server")
}

func notBelow(t *testing.T, pkg pkgImports, prefix string) {
	t.Helper()
	for _, d := range pkg.Deps {
		if d == prefix || strings.HasPrefix(d, prefix+"/") {
			t.Errorf("%s depends on %s", pkg.ImportPath, d)
		}
	}
}
