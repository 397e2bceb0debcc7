// Package authz is where the HTTP APIs ask the policy engine whether a
// request may proceed.
//
// It fills in what every question shares (input version, principal, API,
// request id), turns a denial into an error the APIs map to their own 403,
// and describes version-store changes in the policy's terms.
//
// It imports policy (the input document) and versionstore (to describe
// changes); it must not import the APIs that use it (rest/icebergrest,
// rest/nessie), server or cmd, and holds no policy of its own: a nil Guard
// allows everything, which is what runs when authorization is off.
package authz
