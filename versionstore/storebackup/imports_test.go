package storebackup_test

import (
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/layering"
)

// TestImports keeps the package below the APIs.
func TestImports(t *testing.T) { layering.BelowAPIs(t) }
