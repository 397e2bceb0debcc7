package eventhooks_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering holds the package to its doc.go: no API package, no
// server, no composition root.
func TestLayering(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{join .Deps "\n"}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/floe-catalog/floe/"
	for _, d := range strings.Split(string(out), "\n") {
		for _, banned := range []string{"rest", "server", "merge/mergequeue"} {
			if d == mod+banned || strings.HasPrefix(d, mod+banned+"/") {
				t.Errorf("eventhooks depends on %s", d)
			}
		}
	}
}
