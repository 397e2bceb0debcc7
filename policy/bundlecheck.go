package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"
	"github.com/open-policy-agent/opa/v1/storage"
	"github.com/open-policy-agent/opa/v1/storage/inmem"
	"github.com/open-policy-agent/opa/v1/tester"
)

// Why a bundle was refused: the reason label of
// floe_policy_bundle_refusals_total. A refused bundle never replaces the
// active one, so each of these keeps the last good policy in force.
const (
	refusedInvalid     = "invalid"      // does not parse, or its signature does not verify
	refusedCompile     = "compile"      // Rego compile errors
	refusedNoDecision  = "no_decision"  // defines no data.floe.authz.decision
	refusedMissingData = "missing_data" // refers to a document neither its data nor its rules define
	refusedTests       = "tests_failed" // its own *_test.rego tests fail
	refusedProbe       = "probe"        // a probe decision does not evaluate
	refusedUnstable    = "unstable"     // a local bundle kept changing while New or Reload waited
)

var refusalReasons = []string{refusedInvalid, refusedCompile, refusedNoDecision, refusedMissingData, refusedTests, refusedProbe, refusedUnstable}

// refusal is a bundle's refusal with the reason it is counted under.
type refusal struct {
	reason string
	err    error
}

func (r *refusal) Error() string { return r.err.Error() }
func (r *refusal) Unwrap() error { return r.err }

func refuse(reason string, err error) error { return &refusal{reason: reason, err: err} }

// refusalReason is the metric label of err; an error that is no refusal
// (none should reach it) counts as invalid.
func refusalReason(err error) string {
	if r, ok := errors.AsType[*refusal](err); ok {
		return r.reason
	}
	return refusedInvalid
}

// bundleTestTimeout bounds each of a bundle's own tests at activation. A
// policy test takes microseconds; one that runs for seconds is a bundle
// that would stall decisions too.
const bundleTestTimeout = 5 * time.Second

// maxFailedTestsNamed is how many failing tests a refusal names; the rest
// are counted.
const maxFailedTestsNamed = 5

// runBundleTests runs the bundle's own Rego tests (test_* rules, usually
// in *_test.rego files) with OPA's tester, as `opa test` would over the
// bundle, and returns how many ran. Any failing or erroring test refuses
// the bundle: a bundle that contradicts its author's own tests (a rule
// file cut short, an `is_admin := true` left in) must not become the
// catalog's authorization. todo_test_* rules are skipped, as OPA does.
func runBundleTests(ctx context.Context, b *bundle.Bundle) (int, error) {
	if !hasTestRules(b) {
		return 0, nil
	}
	store := inmem.NewWithOpts(inmem.OptRoundTripOnWrite(false))
	txn, err := store.NewTransaction(ctx, storage.WriteParams)
	if err != nil {
		return 0, fmt.Errorf("open a store for the bundle's tests: %w", err)
	}
	defer store.Abort(ctx, txn)
	ch, err := tester.NewRunner().
		SetStore(store).
		SetBundles(map[string]*bundle.Bundle{bundleName: b}).
		SetTimeout(bundleTestTimeout).
		RunTests(ctx, txn)
	if err != nil {
		return 0, refuse(refusedTests, fmt.Errorf("the bundle's tests do not compile: %w", err))
	}
	ran := 0
	var failed []string
	for r := range ch {
		ran++
		switch {
		case r.Skip:
		case r.Error != nil:
			failed = append(failed, fmt.Sprintf("%s.%s (error: %v)", r.Package, r.Name, r.Error))
		case r.Fail:
			failed = append(failed, fmt.Sprintf("%s.%s", r.Package, r.Name))
		}
	}
	if err := ctx.Err(); err != nil {
		return ran, fmt.Errorf("run the bundle's tests: %w", err)
	}
	if len(failed) == 0 {
		return ran, nil
	}
	slices.Sort(failed)
	named := failed[:min(len(failed), maxFailedTestsNamed)]
	msg := fmt.Sprintf("%d of the bundle's %d tests fail: %s", len(failed), ran, strings.Join(named, ", "))
	if len(failed) > len(named) {
		msg += fmt.Sprintf(" and %d more", len(failed)-len(named))
	}
	return ran, refuse(refusedTests, errors.New(msg))
}

func hasTestRules(b *bundle.Bundle) bool {
	for _, mf := range b.Modules {
		if mf.Parsed == nil {
			continue
		}
		if slices.ContainsFunc(mf.Parsed.Rules, isTestRule) {
			return true
		}
	}
	return false
}

// missingDocuments returns the documents the bundle's policy (its test
// rules and *_test.rego files aside) refers to that neither its data nor
// its rules define, such as data.floe.config.groups when the bundle lost
// floe/config/data.json. Rego reads such a reference as undefined, not
// as an error, so a rule like `not is_admin_group` would quietly hold for
// everyone: the bundle is incomplete, not a policy to enforce.
//
// Only the string prefix of a reference is checked (data.floe.teams in
// data.floe.teams[t].group), and a path that runs into a value that is not
// an object (an array, a string) stops there; a key missing from an
// object is missing.
func missingDocuments(c *ast.Compiler, b *bundle.Bundle) []string {
	seen := map[string]bool{}
	var missing []string
	check := func(ref ast.Ref) {
		if !ref.HasPrefix(ast.DefaultRootRef) || ref.HasPrefix(systemRef) {
			// data.system is OPA's own (data.system.bundles holds the
			// manifests), written at activation, never by a bundle.
			return
		}
		prefix := ref.StringPrefix()
		if len(prefix) < 2 {
			return // data itself, or data[x]
		}
		key := prefix.String()
		if seen[key] {
			return
		}
		seen[key] = true
		if len(c.GetRules(prefix)) > 0 || dataHas(b.Data, prefix[1:]) {
			return
		}
		missing = append(missing, key)
	}
	var visit func(x any) bool
	visit = func(x any) bool {
		switch v := x.(type) {
		case *ast.With:
			// A with target names what a rule replaces, not what it reads.
			ast.NewGenericVisitor(visit).Walk(v.Value)
			return true
		case ast.Ref:
			check(v)
		}
		return false
	}
	for name, m := range c.Modules {
		if strings.HasSuffix(name, "_test.rego") {
			continue
		}
		for _, r := range m.Rules {
			if isTestRule(r) {
				continue
			}
			ast.NewGenericVisitor(visit).Walk(r)
		}
	}
	slices.Sort(missing)
	return missing
}

var systemRef = ast.MustParseRef("data.system")

// dataHas reports whether the bundle's data has the document at path (a
// sequence of string terms).
func dataHas(data map[string]any, path ast.Ref) bool {
	var doc any = data
	for _, t := range path {
		obj, ok := doc.(map[string]any)
		if !ok {
			return true // indexing into an array or a scalar: not a document path
		}
		s, ok := t.Value.(ast.String)
		if !ok {
			return true
		}
		if doc, ok = obj[string(s)]; !ok {
			return false
		}
	}
	return true
}
