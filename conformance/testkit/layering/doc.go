// Package layering lets a package's tests hold it below the APIs.
//
// It lets a package's tests hold it to its place in floe's layers: the
// packages below the APIs (catalog, icebergtable, classify, tablemerge,
// mergeengine) must not import net/http nor depend on any rest/ package
// (BelowAPIs), and the catalog no server/ package either (BelowServer). It
// is for tests only and imports only the standard library.
package layering
