// Package housekeeping groups the background work that keeps a catalog and
// its warehouse tidy: gc (reference-aware deletion of unreachable warehouse
// files), refretention (branch and tag expiry by name prefix) and
// maintenance (the per-table advisory lock engines' maintenance jobs take,
// and table statistics). This package itself holds no code; its
// subpackages sit below the APIs and never import rest/ or server/.
package housekeeping
