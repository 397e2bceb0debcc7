package assemble_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/floe-catalog/floe/conformance/testkit/testserver"
	"github.com/floe-catalog/floe/policy/authn"
	"github.com/floe-catalog/floe/server/assemble"
)

// TestUnmatchedPathsAuthenticateFirst (issue 32, point 8): a path no
// route knows answers 401 to a caller without a valid token, exactly as
// the known routes do, and 404 or 405 only once the caller is
// authenticated; an unknown path must not tell a stranger which paths
// exist.
func TestUnmatchedPathsAuthenticateFirst(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(tokens, fmt.Appendf(nil, `{"tokens": [{"sha256": %q, "principal": "p", "groups": []}]}`, authn.HashSecret("t0ken")), 0o600); err != nil {
		t.Fatal(err)
	}
	s := testserver.Start(t, testserver.Options{Security: &assemble.Security{Authn: assemble.Authn{TokenFile: tokens}}})
	client := &http.Client{Timeout: 10 * time.Second}
	type icebergError struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    int    `json:"code"`
		} `json:"error"`
	}
	for _, tc := range []struct {
		name, method, path, token string
		status                    int
		typ                       string
	}{
		{"unknown path, no token", http.MethodGet, "/v1/lake/nope", "", http.StatusUnauthorized, "NotAuthorizedException"},
		{"unknown path, bad token", http.MethodGet, "/v1/lake/nope", "wrong", http.StatusUnauthorized, "NotAuthorizedException"},
		{"unknown top-level path, no token", http.MethodGet, "/nope", "", http.StatusUnauthorized, "NotAuthorizedException"},
		{"known path, wrong method, no token", http.MethodPatch, "/v1/config", "", http.StatusUnauthorized, "NotAuthorizedException"},
		{"known path, no token", http.MethodGet, "/v1/config", "", http.StatusUnauthorized, "NotAuthorizedException"},
		{"unknown path, valid token", http.MethodGet, "/v1/lake/nope", "t0ken", http.StatusNotFound, "NotFoundException"},
		{"known path, wrong method, valid token", http.MethodPatch, "/v1/config", "t0ken", http.StatusMethodNotAllowed, "MethodNotAllowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), tc.method, "http://"+s.Addr+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body icebergError
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("%s %s: body is not the Iceberg error model: %v", tc.method, tc.path, err)
			}
			if resp.StatusCode != tc.status || body.Error.Code != tc.status || body.Error.Type != tc.typ || body.Error.Message == "" {
				t.Errorf("%s %s: %d %+v, want %d %s", tc.method, tc.path, resp.StatusCode, body.Error, tc.status, tc.typ)
			}
			if tc.status == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s: 401 without WWW-Authenticate", tc.method, tc.path)
			}
		})
	}
}
