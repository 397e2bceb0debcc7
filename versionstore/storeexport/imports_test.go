package storeexport_test

import (
	"go/build"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/layering"
)

// TestImports keeps the package below the APIs, and on the backend
// interface alone: an export must read and write any backend, so the
// package may not reach for the version store or one implementation.
func TestImports(t *testing.T) {
	layering.BelowAPIs(t)
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		if strings.HasPrefix(imp, "github.com/floe-catalog/floe/") && imp != "github.com/floe-catalog/floe/versionstore/backend" {
			t.Errorf("storeexport imports %s; it may use versionstore/backend only", imp)
		}
	}
}
