package maintenance_test

import (
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/layering"
)

// TestImports holds the package to its layer: below the APIs.
func TestImports(t *testing.T) { layering.BelowAPIs(t) }
