package icebergrest

import (
	"net/url"
	"slices"
	"strings"

	"github.com/floe-catalog/floe/versionstore"
)

// namespaceSeparator joins namespace levels in paths and query parameters.
// floe advertises it (URL-encoded) as "namespace-separator" and accepts only
// it: it is the spec's default, so clients that ignore the setting work too.
const namespaceSeparator = "\x1f"

// identifier names a table or view: its namespace levels and its name. As a
// JSON value it is the spec's TableIdentifier.
type identifier struct {
	Namespace []string `json:"namespace"`
	Name      string   `json:"name"`
}

func (id identifier) String() string { return dotted(append(slices.Clone(id.Namespace), id.Name)) }

// key is the identifier's content key in the version store.
func (id identifier) key() versionstore.ContentKey {
	k := make(versionstore.ContentKey, 0, len(id.Namespace)+1) // one allocation, not a clone grown by the name
	return append(append(k, id.Namespace...), id.Name)
}

func (id identifier) validate() error {
	if len(id.Namespace) == 0 {
		return badRequest("invalid identifier %q: the namespace is empty", id.Name)
	}
	if id.Name == "" {
		return badRequest("invalid identifier in namespace %s: the name is empty", dotted(id.Namespace))
	}
	if err := checkObjectName(id.Name); err != nil {
		return err
	}
	return checkNewKey("identifier", id.key())
}

func dotted(levels []string) string { return strings.Join(levels, ".") }

// parseNamespace decodes a {namespace} path variable: percent-encoded levels
// joined by the encoded separator. The router hands variables over still
// encoded, so a level may itself contain an encoded "/".
func parseNamespace(raw string) ([]string, error) {
	s, err := url.PathUnescape(raw)
	if err != nil {
		return nil, badRequest("malformed namespace %q in path: %v", raw, err)
	}
	return splitNamespace(s)
}

// splitNamespace splits a decoded namespace string into levels.
func splitNamespace(s string) ([]string, error) {
	if s == "" {
		return nil, badRequest("the namespace is empty")
	}
	levels := strings.Split(s, namespaceSeparator)
	if err := versionstore.ContentKey(levels).Validate(); err != nil {
		return nil, badRequest("invalid namespace %q: %v", dotted(levels), err)
	}
	return levels, nil
}

// parseName decodes a {table} or {view} path variable.
func parseName(raw string) (string, error) {
	s, err := url.PathUnescape(raw)
	if err != nil {
		return "", badRequest("malformed name %q in path: %v", raw, err)
	}
	if s == "" {
		return "", badRequest("the name is empty")
	}
	return s, nil
}
