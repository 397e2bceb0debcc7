// Package housekeeping groups the background work that keeps a catalog and
// its warehouse tidy.
//
// gc deletes the warehouse files no reference reaches, refretention expires
// branches and tags by name prefix, and maintenance holds the per-table
// advisory lock engines' maintenance jobs take, with table statistics. This
// package holds no code; its subpackages sit below the APIs and never import
// rest/ or server/.
package housekeeping
