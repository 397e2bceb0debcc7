// Package policy will own authorization: authenticating principals from
// bearer tokens (static token file, JWT with JWKS, the Iceberg OAuth2
// client-credentials flow) and the embedded OPA engine behind one question,
// "may this principal do this?", with its documented input document,
// bundles loaded from files or a bundle server, decision logs, and the
// default policy.
//
// No code lives here yet. policy must not import versionstore, rest or
// server: callers describe an operation (principal, action, ref, target ref,
// tables touched) in policy's own types, so the policy engine can be tested
// and reasoned about without a catalog.
package policy
