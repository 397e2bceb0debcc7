// Package policy owns authorization: the embedded OPA engine behind one
// question, "may this principal do this?". Callers describe an operation
// as an Input (principal, action, ref, target ref, contents touched) and
// get a Decision from Engine.Decide. The engine loads a policy bundle from
// a directory or .tar.gz (hot reloaded), from an OPA bundle server (ETag
// polling), or the default bundle compiled into floe; verifies bundle
// signatures when given a key; refuses a bundle that is incomplete or
// fails its own Rego tests, keeping the last good one (bundlecheck.go);
// writes a JSON decision log; and exports
// Prometheus metrics. policy/README.md documents the input document, the
// decision, the default policy and the bundle protocol. Authentication
// (turning a token into a Principal) lives in policy/authn. Decisions run
// on the bundle's compiled plan (policy/planeval) when it agrees with
// OPA's topdown evaluator, on topdown otherwise (planned.go).
//
// Input carries no credentials by design: principals arrive already
// authenticated, so neither policies nor decision logs ever see a token.
// Keep it that way when adding fields.
//
// policy must not import versionstore, rest, server or cmd: the engine is
// tested and reasoned about without a catalog, and OPA stays hidden behind
// this package's small API.
package policy
