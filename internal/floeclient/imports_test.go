package floeclient

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoServerCode: the CLI's client must not pull the server in;
// besides the standard library it may depend only on internal/apidoc,
// itself standard library only.
func TestImportsNoServerCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{
		"github.com/floe-catalog/floe/internal/floeclient": true,
		"github.com/floe-catalog/floe/internal/apidoc":     true,
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list reported no packages")
	}
	for _, d := range deps {
		if !allowed[d] {
			t.Errorf("floeclient depends on %s", d)
		}
	}
}
