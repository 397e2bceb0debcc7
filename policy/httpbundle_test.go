package policy

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// bundleServer serves one bundle resource the way an OPA bundle server
// does: an ETag per bundle, 304 when If-None-Match names it.
type bundleServer struct {
	mu          sync.Mutex
	etag        string
	body        []byte
	status      int // non-zero: answer with this status instead
	ifNoneMatch []string
	notModified int
	served      int
}

func (s *bundleServer) set(etag string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.etag, s.body = etag, body
}

func (s *bundleServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.URL.Path != "/bundles/floe.tar.gz" {
		http.NotFound(w, r)
		return
	}
	s.ifNoneMatch = append(s.ifNoneMatch, r.Header.Get("If-None-Match"))
	if s.status != 0 {
		w.WriteHeader(s.status)
		return
	}
	w.Header().Set("ETag", s.etag)
	if r.Header.Get("If-None-Match") == s.etag {
		s.notModified++
		w.WriteHeader(http.StatusNotModified)
		return
	}
	s.served++
	w.Header().Set("Content-Type", "application/gzip")
	_, _ = w.Write(s.body)
}

// counts returns (bundles served, 304s, requests that sent etag).
func (s *bundleServer) counts(etag string) (served, notModified, sentETag int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, h := range s.ifNoneMatch {
		if h == etag {
			sentETag++
		}
	}
	return s.served, s.notModified, sentETag
}

func startBundleServer(t *testing.T) (*bundleServer, string) {
	t.Helper()
	bs := &bundleServer{}
	srv := httptest.NewServer(bs)
	t.Cleanup(srv.Close)
	return bs, srv.URL + "/bundles/floe.tar.gz"
}

func TestHTTPBundle(t *testing.T) {
	bs, url := startBundleServer(t)
	bs.set(`"e1"`, tarball(t, memBundle("h1", revisionPolicy("h1"))))
	reg := prometheus.NewRegistry()
	e := newTestEngine(t, Options{BundleURL: url, PollInterval: 20 * time.Millisecond, Metrics: reg})
	if got := e.Revision(); got != "h1" {
		t.Fatalf("Revision() = %q, want h1", got)
	}
	if got := decideReason(t, e); got != "policy h1" {
		t.Fatalf("reason = %q", got)
	}

	// Unchanged bundle: the engine sends the ETag and gets 304s.
	waitFor(t, "a 304 for e1", func() bool {
		_, nm, sent := bs.counts(`"e1"`)
		return nm >= 2 && sent >= 2
	})
	if served, _, _ := bs.counts(""); served != 1 {
		t.Fatalf("bundle downloaded %d times while unchanged, want 1", served)
	}

	// A new ETag activates the new revision.
	bs.set(`"e2"`, tarball(t, memBundle("h2", revisionPolicy("h2"))))
	waitFor(t, "revision h2", func() bool { return e.Revision() == "h2" })
	if got := decideReason(t, e); got != "policy h2" {
		t.Fatalf("reason = %q", got)
	}

	// A broken bundle is rejected and h2 stays active. (It fails to parse,
	// so OPA's downloader drops its ETag and fetches it again each poll.)
	bs.set(`"e3"`, tarball(t, memBundle("h3", brokenPolicy)))
	waitFor(t, "rejection of e3", func() bool {
		return metricValue(t, reg, "floe_policy_bundle_activations_total", map[string]string{"outcome": "rejected"}) >= 1
	})
	if got := e.Revision(); got != "h2" {
		t.Fatalf("Revision() after broken bundle = %q, want h2", got)
	}
	if got := decideReason(t, e); got != "policy h2" {
		t.Fatalf("reason after broken bundle = %q", got)
	}

	// A bundle that parses but defines no decision rule is rejected after
	// download; its ETag is kept, so the server answers 304 from then on.
	bs.set(`"e3b"`, tarball(t, memBundle("h3b", "package floe.authz\n\nallow := true\n")))
	waitFor(t, "a 304 for e3b", func() bool {
		_, _, sent := bs.counts(`"e3b"`)
		return sent >= 2
	})
	if got := e.Revision(); got != "h2" {
		t.Fatalf("Revision() after bundle without decision = %q, want h2", got)
	}

	// Reload downloads again even though the ETag is unchanged.
	before, _, _ := bs.counts("")
	if err := e.Reload(t.Context()); err == nil || !strings.Contains(err.Error(), "defines no data.floe.authz.decision rule") {
		t.Fatalf("Reload with bad bundle on server: err = %v, want missing decision rule", err)
	}
	if after, _, _ := bs.counts(""); after != before+1 {
		t.Fatalf("Reload downloaded %d bundles, want 1", after-before)
	}
	bs.set(`"e4"`, tarball(t, memBundle("h4", revisionPolicy("h4"))))
	if err := e.Reload(t.Context()); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if got := e.Revision(); got != "h4" {
		t.Fatalf("Revision() after Reload = %q, want h4", got)
	}

	// Server errors leave the active bundle in place.
	bs.mu.Lock()
	bs.status = http.StatusInternalServerError
	bs.mu.Unlock()
	waitFor(t, "a fetch error", func() bool {
		return metricValue(t, reg, "floe_policy_bundle_fetch_errors_total", nil) >= 1
	})
	if got := decideReason(t, e); got != "policy h4" {
		t.Fatalf("reason during outage = %q", got)
	}
}

func TestHTTPSignedBundle(t *testing.T) {
	keys := newTestKeys(t)
	bs, url := startBundleServer(t)
	bs.set(`"s1"`, signedTarball(t, memBundle("s1", revisionPolicy("s1")), keys))
	reg := prometheus.NewRegistry()
	e := newTestEngine(t, Options{
		BundleURL: url, PollInterval: 20 * time.Millisecond, Metrics: reg,
		VerificationKey: keys.publicPEM, VerificationKeyID: "ops", VerificationAlg: "ES256",
	})
	if got := e.Revision(); got != "s1" {
		t.Fatalf("Revision() = %q, want s1", got)
	}

	// An unsigned bundle is rejected and s1 stays active.
	bs.set(`"u2"`, tarball(t, memBundle("u2", revisionPolicy("u2"))))
	waitFor(t, "rejection of unsigned bundle", func() bool {
		return metricValue(t, reg, "floe_policy_bundle_activations_total", map[string]string{"outcome": "rejected"}) >= 1
	})
	if got := e.Revision(); got != "s1" {
		t.Fatalf("Revision() after unsigned bundle = %q, want s1", got)
	}

	// A correctly signed successor activates.
	bs.set(`"s3"`, signedTarball(t, memBundle("s3", revisionPolicy("s3")), keys))
	waitFor(t, "revision s3", func() bool { return e.Revision() == "s3" })
}

func TestHTTPBundleStartFails(t *testing.T) {
	keys := newTestKeys(t)
	tests := []struct {
		name  string
		setup func(*bundleServer)
		opts  Options
		want  string
	}{
		{
			name:  "server error",
			setup: func(bs *bundleServer) { bs.status = http.StatusInternalServerError },
			want:  "Internal Server Error",
		},
		{
			name:  "unsigned with key",
			setup: func(bs *bundleServer) { bs.set(`"u"`, tarball(t, memBundle("u", revisionPolicy("u")))) },
			opts:  Options{VerificationKey: keys.publicPEM, VerificationAlg: "ES256"},
			want:  "missing .signatures.json",
		},
		{
			name:  "broken policy",
			setup: func(bs *bundleServer) { bs.set(`"b"`, tarball(t, memBundle("b", brokenPolicy))) },
			want:  "rego_parse_error",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bs, url := startBundleServer(t)
			tc.setup(bs)
			opts := tc.opts
			opts.BundleURL = url
			opts.PollInterval = 20 * time.Millisecond
			opts.HTTPStartTimeout = 2 * time.Second
			_, err := New(t.Context(), opts)
			if err == nil || !strings.Contains(err.Error(), "no bundle activated") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New err = %v, want no bundle activated ... %q", err, tc.want)
			}
		})
	}
}
