package policy

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/open-policy-agent/opa/v1/util"
)

// examplePolicies is where the example bundles floe ships live.
const examplePolicies = "../deploy/policies"

// minExampleBundles and minExampleTests keep the tests below from passing
// on an empty or renamed directory.
const (
	minExampleBundles = 3
	minExampleTests   = 10
)

// exampleBundles reads every bundle under deploy/policies.
func exampleBundles(t testing.TB) map[string]*bundle.Bundle {
	t.Helper()
	entries, err := os.ReadDir(examplePolicies)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*bundle.Bundle{}
	for _, e := range entries {
		// deploy/policies/default is policy/defaultbundle as files
		// (deploy/policies checks they are equal); its tests run in
		// TestDefaultBundleRegoTests.
		if !e.IsDir() || e.Name() == "default" {
			continue
		}
		b, err := bundle.NewCustomReader(bundle.NewDirectoryLoader(filepath.Join(examplePolicies, e.Name()))).Read()
		if err != nil {
			t.Fatalf("read bundle %s: %v", e.Name(), err)
		}
		out[e.Name()] = &b
	}
	if len(out) < minExampleBundles {
		t.Fatalf("found %d example bundles in %s, want at least %d", len(out), examplePolicies, minExampleBundles)
	}
	return out
}

// runRegoTests runs a bundle's Rego tests with OPA's tester, reports each
// failure, and returns how many ran.
func runRegoTests(t *testing.T, b *bundle.Bundle) int {
	t.Helper()
	ctx := t.Context()
	store := inmem.NewWithOpts(inmem.OptRoundTripOnWrite(false))
	txn, err := store.NewTransaction(ctx, storage.WriteParams)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Abort(ctx, txn)
	ch, err := tester.NewRunner().SetStore(store).SetBundles(map[string]*bundle.Bundle{"floe": b}).RunTests(ctx, txn)
	if err != nil {
		t.Fatalf("run rego tests: %v", err)
	}
	ran := 0
	for r := range ch {
		ran++
		if !r.Pass() {
			t.Errorf("rego test %s.%s failed: fail=%v err=%v", r.Package, r.Name, r.Fail, r.Error)
		}
	}
	return ran
}

// TestExampleBundles: each bundle in deploy/policies passes its own Rego
// tests, activates in the engine, runs on the plan evaluator, and had its
// plan verified on the inputs of its tests.
func TestExampleBundles(t *testing.T) {
	for name, b := range exampleBundles(t) {
		t.Run(name, func(t *testing.T) {
			if ran := runRegoTests(t, b); ran < minExampleTests {
				t.Errorf("ran %d rego tests, want at least %d", ran, minExampleTests)
			}
			if !strings.HasPrefix(b.Manifest.Revision, name) {
				t.Errorf("revision %q does not name the bundle", b.Manifest.Revision)
			}
			readme, err := os.ReadFile(filepath.Join(examplePolicies, name, "README.md"))
			if err != nil || !bytes.Contains(readme, []byte("Shows")) {
				t.Errorf("%s/README.md should say what the bundle shows: %v", name, err)
			}
			e := newTestEngine(t, Options{Bundle: filepath.Join(examplePolicies, name)})
			a := e.active.Load()
			if a.plan == nil {
				t.Fatalf("runs on topdown: %s", a.topdownWhy)
			}
			if a.testInputs < minExampleTests {
				t.Errorf("plan verified on %d inputs of the bundle's tests, want at least %d", a.testInputs, minExampleTests)
			}
		})
	}
}

// TestBundleTestInputsVerifyPlan: at activation, a plan is also checked
// on the inputs of the bundle's own tests. The plan here comes from a
// bundle that denies everything, the prepared query allows one principal
// that only the bundle's test names; the built-in verification inputs
// cannot tell them apart, the test input can.
func TestBundleTestInputsVerifyPlan(t *testing.T) {
	parse := func(policy, test string) *bundle.Bundle {
		dir := t.TempDir()
		writeBundleDir(t, dir, "r1", policy)
		if test != "" {
			if err := os.WriteFile(filepath.Join(dir, "floe", "authz", "policy_test.rego"), []byte(test), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		b, err := bundle.NewCustomReader(bundle.NewDirectoryLoader(dir)).Read()
		if err != nil {
			t.Fatal(err)
		}
		return &b
	}
	allowZed := parse("package floe.authz\n\ndecision := {\"allow\": input.principal.id == \"zed\", \"reasons\": [\"r\"]}\n", "")
	a, err := prepare(t.Context(), allowZed, -1, EvaluatorTopdown, false)
	if err != nil {
		t.Fatal(err)
	}
	const test = "package floe.authz_test\n\nimport data.floe.authz\n\ntest_zed if authz.decision.allow with input as {\"principal\": {\"id\": \"zed\"}}\n\n" +
		"test_built if authz.decision.allow with input as object.union({}, {\"principal\": {\"id\": \"zed\"}})\n"
	denyAll := parse("package floe.authz\n\ndecision := {\"allow\": false, \"reasons\": [\"r\"]}\n", test)
	if got := len(bundleTestInputs(denyAll)); got != 1 {
		t.Fatalf("found %d ground test inputs, want 1 (the built one is not a constant)", got)
	}
	prog, why := compilePlan(t.Context(), a, denyAll)
	if prog != nil {
		t.Fatal("a plan that disagrees with topdown on a test input was accepted")
	}
	if !strings.Contains(why, "bundle's tests") || !strings.Contains(why, "zed") {
		t.Fatalf("reason %q does not name the test input", why)
	}
	// Without the test, nothing tells the two apart.
	if prog, why := compilePlan(t.Context(), a, parse("package floe.authz\n\ndecision := {\"allow\": false, \"reasons\": [\"r\"]}\n", "")); prog == nil {
		t.Fatalf("plan refused without test inputs: %s", why)
	}
}

// fuzzBundle is a bundle prepared with its plan, for the fuzz target.
type fuzzBundle struct {
	name string
	a    *activeBundle
}

// fuzzBundles prepares the default bundle and every example bundle, each
// on the plan evaluator.
func fuzzBundles(f *testing.F) []fuzzBundle {
	def, err := DefaultBundle()
	if err != nil {
		f.Fatal(err)
	}
	all := map[string]*bundle.Bundle{"default": def}
	for name, b := range exampleBundles(f) {
		all[name] = b
	}
	var out []fuzzBundle
	for name, b := range all {
		a, err := prepare(f.Context(), b, -1, EvaluatorAuto, false)
		if err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		if a.plan == nil {
			f.Fatalf("%s runs on topdown: %s", name, a.topdownWhy)
		}
		out = append(out, fuzzBundle{name, a})
	}
	return out
}

// FuzzBundlesPlanMatchesTopdown decides random input documents with the
// plan and with topdown, for the default bundle and every example bundle
// in deploy/policies; any difference in allow, reasons or failure is a
// failure. A fuzz value that is a JSON object is the input document
// itself, whatever its shape (wrong types, missing fields, extra ones);
// any other value drives fuzzInput, which builds a well-formed input from
// the names the bundles use, so mutations keep reaching their rules. The
// seed corpus is testdata/fuzz/FuzzBundlesPlanMatchesTopdown.
func FuzzBundlesPlanMatchesTopdown(f *testing.F) {
	bundles := fuzzBundles(f)
	f.Fuzz(func(t *testing.T, doc []byte) {
		input := fuzzDocument(doc)
		for _, fb := range bundles {
			if _, diff, _ := compareEvaluators(context.Background(), fb.a, fb.a.plan, input); diff != "" {
				t.Fatalf("bundle %s, input %v: %s", fb.name, input, diff)
			}
		}
	})
}

// fuzzDocument turns a fuzz value into an input document.
func fuzzDocument(doc []byte) ast.Value {
	var x any
	if len(doc) > 0 && doc[0] == '{' && util.UnmarshalJSON(doc, &x) == nil {
		if v, err := ast.InterfaceToValue(x); err == nil {
			return v
		}
	}
	in := fuzzInput(doc)
	return in.astValue()
}

// Vocabularies of fuzzInput: the names the default and example bundles
// test for, and near misses.
var (
	fuzzIDs    = []string{"alice", "bob", "pat", "", "users", "zed"}
	fuzzGroups = []string{"analysts", "engineers", "release", "publishers", "admins", "ingest", "finance",
		"team-sales", "team-finance", "team-marketing", "platform", "schema-owners", "sales", "Admins"}
	fuzzRefs = []string{"main", "prod", "dev", "users/alice/x", "users/bob", "users/", "ingest/a", "release/1",
		"hotfix/x", "release", "teams/sales/q4", "teams/finance", "teams/", "v1.2.3", "v1.2", "feature/x", ""}
	fuzzRefTypes = []string{RefBranch, RefTag, RefDetached, "BRANCH"}
	fuzzNS       = []string{"sales", "crm", "finance", "ledger", "campaigns", "scratch", "db", ""}
	fuzzChanges  = []string{ChangeCreate, ChangeUpdate, ChangeDelete, "rename"}
	fuzzTypes    = []string{TypeTable, TypeView, TypeNamespace, ""}
	fuzzOps      = []string{"append", "overwrite", "delete", "replace", "schema-change"}
	fuzzAPIs     = []string{"iceberg", "nessie"}
)

// fuzzInput builds a well-formed input from the bytes of b, each choice
// taking one byte (zero when b runs out). A byte past a vocabulary's end
// takes a few raw bytes of b as the name instead.
func fuzzInput(b []byte) Input {
	next := func() int {
		if len(b) == 0 {
			return 0
		}
		c := int(b[0])
		b = b[1:]
		return c
	}
	pick := func(vocab []string) string {
		c := next()
		if c < 200 {
			return vocab[c%len(vocab)]
		}
		n := min(c-200, len(b), 12)
		s := string(b[:n])
		b = b[n:]
		return s
	}
	in := Input{Version: InputVersion, API: pick(fuzzAPIs)}
	if next()%16 == 0 {
		in.Version = next() % 3
	}
	in.Principal.ID = pick(fuzzIDs)
	in.Principal.Anonymous = next()%8 == 0
	if g := next() % 5; g > 0 {
		in.Principal.Groups = []string{}
		for range g - 1 {
			in.Principal.Groups = append(in.Principal.Groups, pick(fuzzGroups))
		}
	}
	in.Action = verificationActions[next()%len(verificationActions)]
	if next()%32 == 0 {
		in.Action = Action(pick(fuzzRefs))
	}
	in.Ref = Ref{Name: pick(fuzzRefs), Type: pick(fuzzRefTypes)}
	if next()%2 == 0 {
		in.Target = &Ref{Name: pick(fuzzRefs), Type: pick(fuzzRefTypes)}
	}
	for range next() % 5 {
		c := Content{Change: pick(fuzzChanges), Type: pick(fuzzTypes)}
		for range next()%3 + 1 {
			c.Key = append(c.Key, pick(fuzzNS))
		}
		if next()%3 == 0 {
			c.Iceberg = &IcebergChange{Operations: []string{pick(fuzzOps)}}
		}
		in.Contents = append(in.Contents, c)
	}
	return in
}
