// Command layoutdoc writes docs/layout.md's folder table from every
// package's doc.go.
//
// It writes the "Folders" table of docs/layout.md from the first sentence of
// every package's doc.go, so the map of the code cannot drift from what each
// package says of itself; its test fails when the table is stale. It imports
// only the standard library.
//
//	go run ./internal/layoutdoc -w docs/layout.md
package main
