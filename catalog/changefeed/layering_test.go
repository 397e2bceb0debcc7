package changefeed_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/floe-catalog/floe/conformance/testkit/layering"
)

// TestLayering holds the package to its doc.go: below the APIs, and
// without the policy engine, the server or the composition root.
func TestLayering(t *testing.T) {
	t.Parallel()
	layering.BelowAPIs(t)
	out, err := exec.Command("go", "list", "-f", `{{join .Deps "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/floe-catalog/floe/"
	for _, d := range strings.Split(string(out), "\n") {
		for _, banned := range []string{"policy", "server", "merge/mergequeue"} {
			if d == mod+banned || strings.HasPrefix(d, mod+banned+"/") {
				t.Errorf("changefeed depends on %s", d)
			}
		}
	}
}
