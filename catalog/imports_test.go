package catalog_test

import (
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/layering"
)

// TestImports keeps the catalog below the APIs and the server.
func TestImports(t *testing.T) {
	layering.BelowAPIs(t)
	layering.BelowServer(t)
}
