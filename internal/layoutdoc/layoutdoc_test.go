package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLayoutTableIsCurrent fails when a package's doc.go changed, or a
// package came or went, without docs/layout.md's table following.
func TestLayoutTableIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	page, err := os.ReadFile(filepath.Join(root, "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	table, err := folderTable(root)
	if err != nil {
		t.Fatal(err)
	}
	want, err := replaceTable(page, table)
	if err != nil {
		t.Fatal(err)
	}
	if string(want) != string(page) {
		t.Errorf("docs/layout.md's folder table is stale: run `go run ./internal/layoutdoc -w docs/layout.md`")
	}
	for _, dir := range []string{"server/assemble", "merge/mergeengine", "versionstore", "rest/icebergrest"} {
		if !strings.Contains(table, "| `"+dir+"` |") {
			t.Errorf("the table has no row for %s", dir)
		}
	}
}

// TestEveryPackageHasADocComment: a package without a doc.go, or with an
// empty one, is refused, naming the folder.
func TestEveryPackageHasADocComment(t *testing.T) {
	root := t.TempDir()
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, path), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a/doc.go", "// Package a does one thing. Then more.\npackage a\n")
	write("a/a.go", "package a\n")
	table, err := folderTable(root)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table, "| `a` | Package a does one thing. |") {
		t.Errorf("table = %q", table)
	}
	write("b/b.go", "package b\n")
	if _, err := folderTable(root); err == nil || !strings.Contains(err.Error(), "b: no doc.go") {
		t.Errorf("a package without doc.go: err = %v", err)
	}
	write("b/doc.go", "package b\n")
	if _, err := folderTable(root); err == nil || !strings.Contains(err.Error(), "b: doc.go has no package comment") {
		t.Errorf("a doc.go without a comment: err = %v", err)
	}
}
