package policy

import (
	"embed"
	"fmt"

	"github.com/open-policy-agent/opa/v1/bundle"
)

// The all: prefix keeps the dot-file .manifest, which carries the revision
// and the roots.
//
//go:embed all:defaultbundle
var defaultBundleFS embed.FS

// DefaultBundle parses the default bundle compiled into the binary; tests
// and tools use it to run the default policy's Rego tests.
func DefaultBundle() (*bundle.Bundle, error) {
	b, err := bundle.NewCustomReader(bundle.NewFSLoaderWithRoot(defaultBundleFS, "defaultbundle")).Read()
	if err != nil {
		return nil, fmt.Errorf("read embedded default bundle: %w", err)
	}
	return &b, nil
}
