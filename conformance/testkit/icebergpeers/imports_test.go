package main

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNoFloePackage: the benchmark must drive floe exactly as it
// drives the peers, so its non-test files import no package of floe but
// conformance/testkit/benchhttp, the client code it shares with conformance/testkit/peerbench,
// which imports only the standard library (its own test checks that).
func TestImportsNoFloePackage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/floe-catalog/floe") && path != "github.com/floe-catalog/floe/conformance/testkit/benchhttp" {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
