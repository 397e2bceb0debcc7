package catalog

import (
	"slices"
	"strings"

	"github.com/floe-catalog/floe/versionstore"
)

// Identifier names a table or view: its namespace levels and its name.
type Identifier struct {
	Namespace []string
	Name      string
}

func (id Identifier) String() string { return dotted(append(slices.Clone(id.Namespace), id.Name)) }

// Key is the identifier's content key in the version store.
func (id Identifier) Key() versionstore.ContentKey {
	k := make(versionstore.ContentKey, 0, len(id.Namespace)+1) // one allocation, not a clone grown by the name
	return append(append(k, id.Namespace...), id.Name)
}

func dotted(levels []string) string { return strings.Join(levels, ".") }
