// Package s3sign signs engines' S3 requests with floe's credentials, scoped
// to a table, never a deletion.
//
// It signs S3 requests for engines, on floe's behalf, as the Iceberg REST
// spec's remote signing asks: an engine sends the request it is about to
// make (method, URI, headers) and gets back the headers that authorize it,
// signed with floe's own credentials (AWS Signature V4). Engines then need
// no credentials of their own, and can do nothing floe did not sign.
//
// It owns what a sign request is (ParseRequest), what S3 operation it
// names and on which bucket and key (Classify against the warehouse's
// Endpoint), the rule no caller can loosen (deletions and operations
// outside a small allowlist are refused before anybody is asked), and the
// signature itself (Signer). Which table a key belongs to and whether a
// principal may read or write it are decided above, by the Iceberg REST
// facade and the policy engine.
//
// It must not import the HTTP APIs (rest/...), the version store or the
// policy engine.
package s3sign
