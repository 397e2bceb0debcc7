package icebergtable

import (
	"slices"

	"github.com/apache/iceberg-go/table"
)

// Table properties that place a table's files outside its location.
// write.object-storage.path and write.folder-storage.path are the older
// names of write.data.path, which Java's location providers still read.
const (
	PropDataPath          = "write.data.path"
	propObjectStoragePath = "write.object-storage.path"
	propFolderStoragePath = "write.folder-storage.path"
)

// FileScope is where a table's files may be: its location and the paths
// its properties move data or metadata files to. An engine is let touch
// a file (remote signing) only inside a table's scope.
type FileScope struct {
	// Location is the table's location, normalized.
	Location string
	prefixes []string
}

// FileScopeOf returns the scope of the table meta describes. Only prefixes
// the warehouse contains are in it: a property naming a place outside the
// warehouse widens nothing.
func (w *Warehouse) FileScopeOf(meta table.Metadata) FileScope {
	var s FileScope
	props := PropertiesOf(meta)
	for _, loc := range []string{meta.Location(), props[PropDataPath], props[PropMetadataPath],
		props[propObjectStoragePath], props[propFolderStoragePath]} {
		if loc == "" {
			continue
		}
		n, err := w.Contains(loc)
		if err != nil {
			continue
		}
		if s.Location == "" && loc == meta.Location() {
			s.Location = n
		}
		s.prefixes = append(s.prefixes, n)
	}
	return s
}

// Prefixes are the scope's locations, normalized: the table's location
// first, then its write.data.path, write.metadata.path and object-storage
// paths, each only when the warehouse contains it. Vended credentials are
// scoped to them (s3vend.Grant).
func (s FileScope) Prefixes() []string { return slices.Clone(s.prefixes) }

// Holds reports whether loc, a location the warehouse contains
// (normalized), lies strictly below one of the scope's prefixes, or is
// one of them when whole is true (a listing of the table's folder).
func (s FileScope) Holds(loc string, whole bool) bool {
	u, err := normalizeLocation(loc)
	if err != nil {
		return false
	}
	for _, p := range s.prefixes {
		pu, err := normalizeLocation(p)
		if err != nil {
			continue
		}
		if below(u, pu) || whole && u.Scheme == pu.Scheme && u.Host == pu.Host && u.Path == pu.Path {
			return true
		}
	}
	return false
}
