// Package authn owns authentication: it turns a request's bearer token into
// a policy.Principal. Tokens come from a static token file (only their
// SHA-256 hashes are stored), from JWTs verified against a JWKS file or URL,
// or from the Iceberg REST OAuth2 client-credentials endpoint this package
// serves and whose tokens it signs and verifies itself. A loopback-only dev
// mode admits requests without a token as an anonymous principal.
//
// authn answers "who is asking?", never "may they?": that is the policy
// engine's question. It must not import rest, server or versionstore; the
// API layers call Middleware and TokenHandler and write their own error
// bodies.
package authn
