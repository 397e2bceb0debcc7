package policy

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/prometheus/client_golang/prometheus"
)

// revisionPolicy allows reads and names its revision in every reason, so a
// test can tell which bundle answered.
func revisionPolicy(rev string) string {
	return "package floe.authz\n\ndecision := {\"allow\": input.action == \"read\", \"reasons\": [\"policy " + rev + "\"]}\n"
}

const brokenPolicy = "package floe.authz\n\ndecision := {\"allow\": true,\n"

// writeBundleDir writes a bundle directory with one policy file.
func writeBundleDir(t *testing.T, dir, rev, policy string) {
	t.Helper()
	files := map[string]string{
		".manifest":             `{"revision":"` + rev + `","roots":["floe"]}`,
		"floe/authz/authz.rego": policy,
		"floe/config/data.json": `{"owner":"test"}`,
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// memBundle builds an in-memory bundle with one policy file.
func memBundle(rev, policy string) bundle.Bundle {
	roots := []string{"floe"}
	return bundle.Bundle{
		Manifest: bundle.Manifest{Revision: rev, Roots: &roots},
		Data:     map[string]any{"floe": map[string]any{"config": map[string]any{"owner": "test"}}},
		Modules: []bundle.ModuleFile{{
			URL:  "/floe/authz/authz.rego",
			Path: "/floe/authz/authz.rego",
			Raw:  []byte(policy),
		}},
	}
}

// tarball writes b as a .tar.gz.
func tarball(t *testing.T, b bundle.Bundle) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := bundle.Write(&buf, b); err != nil {
		t.Fatalf("write bundle: %v", err)
	}
	return buf.Bytes()
}

// testKeys is an ES256 key pair in the PEM forms OPA reads.
type testKeys struct {
	privatePEM, publicPEM string
}

func newTestKeys(t *testing.T) testKeys {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	priv, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return testKeys{
		privatePEM: string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: priv})),
		publicPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})),
	}
}

// signedTarball signs b with OPA's bundle signing and writes it.
func signedTarball(t *testing.T, b bundle.Bundle, keys testKeys) []byte {
	t.Helper()
	if err := b.GenerateSignature(bundle.NewSigningConfig(keys.privatePEM, "ES256", ""), "floe-test", false); err != nil {
		t.Fatalf("sign bundle: %v", err)
	}
	return tarball(t, b)
}

// waitFor polls cond until it holds or the bounded wait runs out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func decideReason(t *testing.T, e *Engine) string {
	t.Helper()
	d, err := e.Decide(t.Context(), op(principal("alice"), ActionRead, branchRef("main")))
	if err != nil {
		t.Fatalf("Decide: %v", err)
	}
	if !d.Allow || len(d.Reasons) != 1 {
		t.Fatalf("decision = %+v, want one allow reason", d)
	}
	return d.Reasons[0]
}

func TestLocalDirectoryHotReload(t *testing.T) {
	dir := t.TempDir()
	writeBundleDir(t, dir, "r1", revisionPolicy("r1"))
	reg := prometheus.NewRegistry()
	e := newTestEngine(t, Options{Bundle: dir, PollInterval: 20 * time.Millisecond, Metrics: reg})
	if got := e.Revision(); got != "r1" {
		t.Fatalf("Revision() = %q, want r1", got)
	}
	if got := decideReason(t, e); got != "policy r1" {
		t.Fatalf("reason = %q, want policy r1", got)
	}

	writeBundleDir(t, dir, "r2", revisionPolicy("r2"))
	waitFor(t, "revision r2", func() bool { return e.Revision() == "r2" })
	if got := decideReason(t, e); got != "policy r2" {
		t.Fatalf("reason after reload = %q, want policy r2", got)
	}

	// A broken policy is rejected; r2 keeps answering.
	writeBundleDir(t, dir, "r3", brokenPolicy)
	waitFor(t, "rejected activation", func() bool {
		return metricValue(t, reg, "floe_policy_bundle_activations_total", map[string]string{"outcome": "rejected"}) >= 1
	})
	if got := e.Revision(); got != "r2" {
		t.Fatalf("Revision() after broken bundle = %q, want r2", got)
	}
	if got := decideReason(t, e); got != "policy r2" {
		t.Fatalf("reason after broken bundle = %q, want policy r2", got)
	}
	if err := e.Reload(t.Context()); err == nil || !strings.Contains(err.Error(), "rego_parse_error") {
		t.Fatalf("Reload of broken bundle: err = %v, want a parse error", err)
	}
	// The broken content is tried once per change, not on every poll.
	time.Sleep(100 * time.Millisecond)
	if got := metricValue(t, reg, "floe_policy_bundle_activations_total", map[string]string{"outcome": "rejected"}); got != 2 {
		t.Fatalf("rejected activations = %v, want 2 (one poll, one Reload)", got)
	}
	if got := metricValue(t, reg, "floe_policy_bundle_info", map[string]string{"revision": "r2"}); got != 1 {
		t.Fatalf("bundle info r2 = %v, want 1", got)
	}
	if got := metricValue(t, reg, "floe_policy_bundle_info", map[string]string{"revision": "r1"}); got != -1 {
		t.Fatalf("bundle info r1 = %v, want absent", got)
	}

	// Fixing the bundle activates it.
	writeBundleDir(t, dir, "r4", revisionPolicy("r4"))
	waitFor(t, "revision r4", func() bool { return e.Revision() == "r4" })
}

func TestLocalBundleRejectedAtStart(t *testing.T) {
	tests := []struct {
		name   string
		policy string
		want   string
	}{
		{"parse error", brokenPolicy, "rego_parse_error"},
		{"no decision rule", "package floe.authz\n\nallow := true\n", "defines no data.floe.authz.decision rule"},
		{"conflicting rules", "package floe.authz\n\ndecision := {\"allow\": true, \"reasons\": []}\ndecision := {\"allow\": false, \"reasons\": []} if input.action == \"read\"\n", "probe decision"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeBundleDir(t, dir, "bad", tc.policy)
			_, err := New(t.Context(), Options{Bundle: dir})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New err = %v, want containing %q", err, tc.want)
			}
		})
	}
}

func TestLocalTarballBundle(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bundle.tar.gz")
	if err := os.WriteFile(path, tarball(t, memBundle("t1", revisionPolicy("t1"))), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newTestEngine(t, Options{Bundle: path, PollInterval: 20 * time.Millisecond})
	if got := e.Revision(); got != "t1" {
		t.Fatalf("Revision() = %q, want t1", got)
	}
	if got := decideReason(t, e); got != "policy t1" {
		t.Fatalf("reason = %q", got)
	}
	// Replace the file atomically, as a deploy would.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, tarball(t, memBundle("t2", revisionPolicy("t2"))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "revision t2", func() bool { return e.Revision() == "t2" })
	if got := decideReason(t, e); got != "policy t2" {
		t.Fatalf("reason = %q", got)
	}
}

func TestSignedLocalBundle(t *testing.T) {
	keys := newTestKeys(t)
	other := newTestKeys(t)
	write := func(t *testing.T, data []byte) string {
		path := filepath.Join(t.TempDir(), "bundle.tar.gz")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	opts := func(path string) Options {
		return Options{Bundle: path, VerificationKey: keys.publicPEM, VerificationAlg: "ES256"}
	}

	t.Run("signed accepted", func(t *testing.T) {
		e := newTestEngine(t, opts(write(t, signedTarball(t, memBundle("s1", revisionPolicy("s1")), keys))))
		if got := e.Revision(); got != "s1" {
			t.Fatalf("Revision() = %q, want s1", got)
		}
	})
	t.Run("unsigned rejected", func(t *testing.T) {
		_, err := New(t.Context(), opts(write(t, tarball(t, memBundle("u1", revisionPolicy("u1"))))))
		if err == nil || !strings.Contains(err.Error(), "missing .signatures.json") {
			t.Fatalf("New err = %v, want missing signature", err)
		}
	})
	t.Run("other key rejected", func(t *testing.T) {
		_, err := New(t.Context(), opts(write(t, signedTarball(t, memBundle("o1", revisionPolicy("o1")), other))))
		if err == nil || !strings.Contains(err.Error(), "verify") {
			t.Fatalf("New err = %v, want verification failure", err)
		}
	})
	t.Run("tampered rejected", func(t *testing.T) {
		b := memBundle("x1", revisionPolicy("x1"))
		if err := b.GenerateSignature(bundle.NewSigningConfig(keys.privatePEM, "ES256", ""), "floe-test", false); err != nil {
			t.Fatal(err)
		}
		// Change the policy after signing: the signature still verifies,
		// the file hash no longer matches.
		b.Modules[0].Raw = []byte(revisionPolicy("evil"))
		_, err := New(t.Context(), opts(write(t, tarball(t, b))))
		if err == nil || !strings.Contains(err.Error(), "digest mismatch") {
			t.Fatalf("New err = %v, want digest mismatch", err)
		}
	})
	t.Run("hmac", func(t *testing.T) {
		b := memBundle("h1", revisionPolicy("h1"))
		if err := b.GenerateSignature(bundle.NewSigningConfig("s3cret", "HS256", ""), "", false); err != nil {
			t.Fatal(err)
		}
		path := write(t, tarball(t, b))
		e := newTestEngine(t, Options{Bundle: path, VerificationKey: "s3cret", VerificationAlg: "HS256"})
		if got := e.Revision(); got != "h1" {
			t.Fatalf("Revision() = %q, want h1", got)
		}
		if _, err := New(t.Context(), Options{Bundle: path, VerificationKey: "wrong", VerificationAlg: "HS256"}); err == nil {
			t.Fatal("bundle signed with another secret: want error")
		}
	})
}

// TestDecideDuringReloads runs decisions while bundles swap underneath;
// every decision must come whole from one bundle or the other.
func TestDecideDuringReloads(t *testing.T) {
	dir := t.TempDir()
	writeBundleDir(t, dir, "a", revisionPolicy("a"))
	e := newTestEngine(t, Options{Bundle: dir, PollInterval: time.Hour})
	stop := make(chan struct{})
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				d, err := e.Decide(t.Context(), op(principal("alice"), ActionRead, branchRef("main")))
				if err != nil {
					errs <- err
					return
				}
				if len(d.Reasons) != 1 || (d.Reasons[0] != "policy a" && d.Reasons[0] != "policy b") {
					errs <- fmt.Errorf("unexpected decision %+v", d)
					return
				}
			}
		})
	}
	for i := range 20 {
		rev := []string{"a", "b"}[i%2]
		writeBundleDir(t, dir, rev, revisionPolicy(rev))
		if err := e.Reload(t.Context()); err != nil {
			t.Errorf("Reload %d: %v", i, err)
		}
		if got := e.Revision(); got != rev {
			t.Errorf("Revision() after Reload %d = %q, want %q", i, got, rev)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
