package console

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// Prefix is where the console is served.
const Prefix = "/ui/"

//go:embed web/index.html web/style.css dist/app.js
var assets embed.FS

// files maps a path below Prefix to the embedded file it serves.
var files = map[string]string{
	"":           "web/index.html",
	"index.html": "web/index.html",
	"style.css":  "web/style.css",
	"app.js":     "dist/app.js",
}

// contentSecurityPolicy allows nothing from another origin: the console
// works offline, and a script injected through data (a table property, a
// commit message) could not run or send anything anywhere.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

type asset struct {
	body        []byte
	contentType string
	etag        string
}

// Handler serves the console's files below Prefix; it must be mounted at
// Prefix with the prefix left in the path. Any other path below Prefix
// answers the page itself, so a reload of a deep link works.
func Handler() (http.Handler, error) {
	byPath := map[string]asset{}
	for name, file := range files {
		body, err := fs.ReadFile(assets, file)
		if err != nil {
			return nil, fmt.Errorf("console: embedded %s: %w", file, err)
		}
		sum := sha256.Sum256(body)
		ct := mime.TypeByExtension(path.Ext(file))
		if ct == "" {
			ct = "application/octet-stream"
		}
		byPath[name] = asset{body: body, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "the console only serves files", http.StatusMethodNotAllowed)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, Prefix)
		a, ok := byPath[name]
		if !ok {
			if path.Ext(name) != "" {
				http.NotFound(w, r)
				return
			}
			a = byPath[""]
		}
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		// Revalidated every time: the files are small, and a new binary
		// must never run an old script against a new API.
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag)
		if r.Header.Get("If-None-Match") == a.etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		h.Set("Content-Length", fmt.Sprint(len(a.body)))
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(a.body)
	}), nil
}
