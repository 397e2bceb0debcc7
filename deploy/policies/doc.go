// Package policies holds the example OPA bundles floe ships, and checks the
// default one is compiled in.
//
// It holds the example OPA bundles floe ships in deploy/policies, one folder
// each; it has no code, only the test that the default bundle here is the
// one compiled into floe. The bundles' Rego tests run in package policy
// (TestExampleBundles), which also checks them on floe's plan evaluator. It
// must not import floe's packages outside its tests.
package policies
