package console_test

import (
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/floe-catalog/floe/server/console"
)

// serve runs the console's handler on a free loopback port, mounted as
// floe serve mounts it.
func serve(t *testing.T) string {
	t.Helper()
	h, err := console.Handler()
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, h)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return "http://" + ln.Addr().String()
}

func get(t *testing.T, url string, header ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(body)
}

func TestServesTheEmbeddedFiles(t *testing.T) {
	base := serve(t)
	for _, tc := range []struct {
		path, contentType, contains string
	}{
		{"/ui/", "text/html", `src="/ui/app.js"`},
		{"/ui/index.html", "text/html", `href="/ui/style.css"`},
		{"/ui/app.js", "text/javascript", "/api/v2"},
		{"/ui/style.css", "text/css", ":root"},
		// A deep link reloaded in the browser gets the page.
		{"/ui/refs/main", "text/html", `id="app"`},
	} {
		t.Run(tc.path, func(t *testing.T) {
			resp, body := get(t, base+tc.path)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tc.contentType) {
				t.Errorf("Content-Type %q, want %s", ct, tc.contentType)
			}
			if !strings.Contains(body, tc.contains) {
				t.Errorf("body lacks %q", tc.contains)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Error("no X-Content-Type-Options: nosniff")
			}
		})
	}
}

func TestRevalidatesWithETag(t *testing.T) {
	base := serve(t)
	resp, _ := get(t, base+"/ui/app.js")
	etag := resp.Header.Get("ETag")
	if etag == "" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("ETag %q, Cache-Control %q", etag, resp.Header.Get("Cache-Control"))
	}
	resp, body := get(t, base+"/ui/app.js", "If-None-Match", etag)
	if resp.StatusCode != http.StatusNotModified || body != "" {
		t.Fatalf("revalidation: status %d, %d bytes", resp.StatusCode, len(body))
	}
}

func TestUnknownFilesAndWritesAreRefused(t *testing.T) {
	base := serve(t)
	if resp, _ := get(t, base+"/ui/secret.js"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown file: status %d, want 404", resp.StatusCode)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Post(base+"/ui/", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: status %d, want 405", resp.StatusCode)
	}
}

// TestNothingFromElsewhere keeps the console working offline: no asset
// names a script, style, font or image on another origin. (The CSP would
// block one anyway; this says which file did it.)
func TestNothingFromElsewhere(t *testing.T) {
	base := serve(t)
	remote := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//|@import|fonts\.googleapis|unpkg|jsdelivr|cdnjs`)
	for _, path := range []string{"/ui/", "/ui/app.js", "/ui/style.css"} {
		_, body := get(t, base+path)
		if m := remote.FindString(body); m != "" {
			t.Errorf("%s refers to another origin: %q", path, m)
		}
	}
}
