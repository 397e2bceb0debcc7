package mergeengine

import (
	"go/build"
	"strings"
	"testing"
)

// TestImports keeps the engine below the APIs.
func TestImports(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if imp == "net/http" || strings.Contains(imp, "/floe/rest") {
			t.Errorf("mergeengine imports %s", imp)
		}
	}
}
