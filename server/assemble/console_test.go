package assemble_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/policy/authn"
	"github.com/floe-catalog/floe/server/assemble"
)

// TestServesTheConsole: the process serves the web console's files at
// /ui/ without a token (they are the same for everyone and hold no
// data), while the APIs the page calls still demand one.
func TestServesTheConsole(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokens, fmt.Appendf(nil, `{"tokens": [{"sha256": %q, "principal": "p", "groups": []}]}`, authn.HashSecret("t0ken")), 0o600); err != nil {
		t.Fatal(err)
	}
	s := testserver.Start(t, testserver.Options{Security: &assemble.Security{Authn: assemble.Authn{TokenFile: tokens}}})
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	status := func(path string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+s.Addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusMovedPermanently {
			return resp.StatusCode, resp.Header.Get("Location")
		}
		return resp.StatusCode, string(body)
	}
	if code, body := status("/ui/"); code != http.StatusOK || !strings.Contains(body, "/ui/app.js") {
		t.Errorf("/ui/: %d %.80q", code, body)
	}
	if code, body := status("/ui/app.js"); code != http.StatusOK || len(body) < 1000 {
		t.Errorf("/ui/app.js: %d, %d bytes", code, len(body))
	}
	if code, loc := status("/ui"); code != http.StatusMovedPermanently || loc != "/ui/" {
		t.Errorf("/ui: %d to %q, want 301 to /ui/", code, loc)
	}
	if code, _ := status("/api/v2/trees"); code != http.StatusUnauthorized {
		t.Errorf("/api/v2/trees without a token: %d, want 401", code)
	}
}
