package policy

import (
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The cases of issue 32, point 6: a bundle directory that is replaced by
// a bad one keeps the last good bundle in force, and says why. Each case
// starts from the shipped default bundle (revision "good") served from a
// directory, breaks it the way an operator's bad day would, and checks
// that the engine refuses the result under the right reason, logs it,
// counts it, and still decides as the good bundle does.

// writeDefaultBundle writes the shipped default bundle into dir under
// revision rev.
func writeDefaultBundle(t *testing.T, dir, rev string) {
	t.Helper()
	err := fs.WalkDir(defaultBundleFS, "defaultbundle", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := defaultBundleFS.ReadFile(p)
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(p, "defaultbundle/")
		if rel == ".manifest" {
			data = []byte(`{"revision":"` + rev + `","roots":["floe"]}`)
		}
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		t.Fatalf("write default bundle: %v", err)
	}
}

// String is everything written so far (lockedBuffer: decisionlog_test.go).
func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// goodBundleEngine serves the default bundle from a directory, polled
// every 20ms.
func goodBundleEngine(t *testing.T) (*Engine, string, *prometheus.Registry, *lockedBuffer) {
	t.Helper()
	dir := t.TempDir()
	writeDefaultBundle(t, dir, "good")
	reg := prometheus.NewRegistry()
	logs := &lockedBuffer{}
	e := newTestEngine(t, Options{Bundle: dir, PollInterval: 20 * time.Millisecond, Metrics: reg,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if got := e.Revision(); got != "good" {
		t.Fatalf("Revision() = %q, want good", got)
	}
	return e, dir, reg, logs
}

// goodDecisions are what the default bundle decides and a broken copy got
// wrong in the issue: bob may not create alice's branches, alice may not
// write finance tables, admins may create branches.
func checkGoodDecisions(t *testing.T, e *Engine) {
	t.Helper()
	for _, tc := range []struct {
		name  string
		in    Input
		allow bool
	}{
		{"bob creates users/alice/x", op(principal("bob"), ActionCreateRef, branchRef("users/alice/x")), false},
		{"alice writes finance.ledger", func() Input {
			in := op(principal("alice"), ActionWriteTable, branchRef("users/alice/fix"))
			in.Contents = []Content{{Key: []string{"finance", "ledger"}, Type: "ICEBERG_TABLE", Change: ChangeUpdate}}
			return in
		}(), false},
		{"admin creates dev", op(principal("root", "admins"), ActionCreateRef, branchRef("dev")), true},
		{"alice writes users/alice/fix", op(principal("alice"), ActionWriteTable, branchRef("users/alice/fix")), true},
	} {
		d, err := e.Decide(t.Context(), tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if d.Allow != tc.allow {
			t.Errorf("%s: allow = %v (%v), want %v", tc.name, d.Allow, d.Reasons, tc.allow)
		}
	}
}

func refusals(t *testing.T, reg prometheus.Gatherer, reason string) float64 {
	t.Helper()
	return metricValue(t, reg, "floe_policy_bundle_refusals_total", map[string]string{"reason": reason})
}

// expectRefusal waits for the poller to refuse the directory's content
// under reason, then checks the good bundle still decides, the log says
// why, and Reload reports the same refusal.
func expectRefusal(t *testing.T, e *Engine, reg *prometheus.Registry, logs *lockedBuffer, reason, why string) {
	t.Helper()
	waitFor(t, "a refusal for "+reason, func() bool { return refusals(t, reg, reason) >= 1 })
	if got := e.Revision(); got != "good" {
		t.Fatalf("Revision() after a %s bundle = %q, want good", reason, got)
	}
	checkGoodDecisions(t, e)
	if l := logs.String(); !strings.Contains(l, "policy bundle refused; keeping the active one") ||
		!strings.Contains(l, "reason="+reason) || !strings.Contains(l, why) {
		t.Errorf("log does not say the bundle was refused for %s (%q):\n%s", reason, why, l)
	}
	err := e.Reload(t.Context())
	if err == nil || !strings.Contains(err.Error(), why) {
		t.Errorf("Reload: err = %v, want a refusal saying %q", err, why)
	}
	if refusalReason(err) != reason {
		t.Errorf("Reload refused for %q, want %q", refusalReason(err), reason)
	}
	if got := e.Revision(); got != "good" {
		t.Fatalf("Revision() after Reload = %q, want good", got)
	}
	if got := metricValue(t, reg, "floe_policy_bundle_info", map[string]string{"revision": "good"}); got != 1 {
		t.Errorf("floe_policy_bundle_info{revision=good} = %v, want 1", got)
	}
}

func rewrite(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(edit(string(data))), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBundleFailingItsOwnTestsIsRefused: `is_admin := true` left in a
// rule file compiles, and made every principal an admin (bob created
// users/alice/*); the bundle's own tests catch it.
func TestBundleFailingItsOwnTestsIsRefused(t *testing.T) {
	e, dir, reg, logs := goodBundleEngine(t)
	rewrite(t, filepath.Join(dir, "floe", "authz", "authz.rego"), func(s string) string {
		return s + "\nis_admin := true\n"
	})
	writeManifest(t, dir, "admin-for-all")
	expectRefusal(t, e, reg, logs, refusedTests, "test_non_admin_cannot_create_arbitrary_branch")
}

// TestBundleMissingItsDataDocumentIsRefused: without floe/config/data.json
// the group names are undefined, which Rego reads as "not in the group"
// for denials (alice wrote finance.*) and for grants alike (admins lost
// branch creation).
func TestBundleMissingItsDataDocumentIsRefused(t *testing.T) {
	t.Run("with tests", func(t *testing.T) {
		e, dir, reg, logs := goodBundleEngine(t)
		if err := os.Remove(filepath.Join(dir, "floe", "config", "data.json")); err != nil {
			t.Fatal(err)
		}
		writeManifest(t, dir, "no-config")
		expectRefusal(t, e, reg, logs, refusedMissingData, "data.floe.config.groups.admins")
	})
	// Without its tests the bundle is still refused: the check of the
	// documents the policy reads does not lean on the author's tests.
	t.Run("without tests", func(t *testing.T) {
		e, dir, reg, logs := goodBundleEngine(t)
		for _, p := range []string{"floe/config/data.json", "floe/authz/authz_test.rego", "floe/merge/check_test.rego"} {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
				t.Fatal(err)
			}
		}
		writeManifest(t, dir, "no-config-no-tests")
		expectRefusal(t, e, reg, logs, refusedMissingData, "data.floe.config.namespace_groups")
	})
}

// TestBundleWithARuleFileCutShortIsRefused: a copy that stopped part way
// through authz.rego. Cut inside a rule, the file does not parse; cut at
// a rule boundary it compiles and lost the per-namespace denials (alice
// wrote finance.*), which the bundle's own tests notice.
func TestBundleWithARuleFileCutShortIsRefused(t *testing.T) {
	const marker = "# --- per-namespace groups"
	t.Run("mid-rule", func(t *testing.T) {
		e, dir, reg, logs := goodBundleEngine(t)
		rewrite(t, filepath.Join(dir, "floe", "authz", "authz.rego"), func(s string) string {
			i := strings.Index(s, marker)
			j := strings.LastIndex(s[:i], "if {")
			return s[:j+len("if {")+3]
		})
		expectRefusal(t, e, reg, logs, refusedInvalid, "rego_parse_error")
	})
	t.Run("at a rule boundary", func(t *testing.T) {
		e, dir, reg, logs := goodBundleEngine(t)
		path := filepath.Join(dir, "floe", "authz", "authz.rego")
		rewrite(t, path, func(s string) string {
			i := strings.Index(s, marker)
			if i < 0 {
				t.Fatalf("authz.rego has no %q to cut at", marker)
			}
			return s[:i]
		})
		// Without its tests the cut bundle would be activated: it is the
		// case the tests are there for.
		snap, err := e.local.snapshot()
		if err != nil {
			t.Fatal(err)
		}
		cut, err := e.local.read(snap)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := prepare(t.Context(), cut, -1, EvaluatorTopdown, false); err != nil {
			t.Fatalf("the cut bundle should pass every check but its tests: %v", err)
		}
		expectRefusal(t, e, reg, logs, refusedTests, "test_finance_write_requires_group")
	})
}

func writeManifest(t *testing.T, dir, rev string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, ".manifest"), []byte(`{"revision":"`+rev+`","roots":["floe"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHalfCopiedBundleIsNeverActivated: a directory rewritten in place,
// file by file, passes through states that are whole bundles of neither
// revision (here the new manifest and rules over the old data). The
// engine activates content only once two polls saw it unchanged, so a
// copy that finishes within a poll interval is activated whole, and never
// in part. The polls are driven by hand (the poller's interval is an
// hour) so that the interleaving is the test's, not the scheduler's.
func TestHalfCopiedBundleIsNeverActivated(t *testing.T) {
	dir := t.TempDir()
	writeDefaultBundle(t, dir, "good")
	reg := prometheus.NewRegistry()
	e := newTestEngine(t, Options{Bundle: dir, PollInterval: time.Hour, Metrics: reg})
	poll := func() {
		t.Helper()
		if err := e.reloadLocal(t.Context(), false); err != nil {
			t.Fatalf("poll: %v", err)
		}
	}
	configPath := filepath.Join(dir, "floe", "config", "data.json")

	// The copy of revision "next", which gives namespace hr to group hr,
	// gets as far as the manifest.
	writeManifest(t, dir, "next")
	poll()
	if got := e.Revision(); got != "good" {
		t.Fatalf("Revision() after one poll of a half-copied bundle = %q, want good", got)
	}
	// The copy goes on; each poll sees new content and waits for it to
	// settle.
	rewrite(t, configPath, func(s string) string {
		return strings.Replace(s, `"finance": "finance"`, `"finance": "finance", "hr": "hr"`, 1)
	})
	poll()
	if got := e.Revision(); got != "good" {
		t.Fatalf("Revision() while the copy goes on = %q, want good", got)
	}
	// Unchanged at the next poll: whole, and activated.
	poll()
	if got := e.Revision(); got != "next" {
		t.Fatalf("Revision() once the copy settled = %q, want next", got)
	}
	in := op(principal("alice"), ActionWriteTable, branchRef("users/alice/fix"))
	in.Contents = []Content{{Key: []string{"hr", "payroll"}, Type: "ICEBERG_TABLE", Change: ChangeUpdate}}
	if d, err := e.Decide(t.Context(), in); err != nil || d.Allow {
		t.Fatalf("alice writes hr.payroll under next: %+v, %v; want a denial", d, err)
	}
	if got := metricValue(t, reg, "floe_policy_bundle_activations_total", map[string]string{"outcome": "ok"}); got != 2 {
		t.Errorf("activations = %v, want 2 (good, next): no half-copied state in between", got)
	}

	// The real poller, copying file by file faster than it polls: every
	// state it activates is a whole revision.
	dir2 := t.TempDir()
	writeDefaultBundle(t, dir2, "r0")
	e2 := newTestEngine(t, Options{Bundle: dir2, PollInterval: 200 * time.Millisecond})
	writeDefaultBundle(t, dir2, "r1")
	waitFor(t, "revision r1", func() bool { return e2.Revision() == "r1" })
}

// TestBundleRefusalReasonsExported: every reason is a series from the
// start, so a rate() alert sees the first refusal.
func TestBundleRefusalReasonsExported(t *testing.T) {
	reg := prometheus.NewRegistry()
	newTestEngine(t, Options{Metrics: reg})
	for _, reason := range refusalReasons {
		if got := refusals(t, reg, reason); got != 0 {
			t.Errorf("floe_policy_bundle_refusals_total{reason=%q} = %v, want 0", reason, got)
		}
	}
}
