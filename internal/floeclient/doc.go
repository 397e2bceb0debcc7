// Package floeclient is the CLI's client of floe's own API
// (/api/floe/v1, package rest/floeapi). Each capability adds its typed
// calls in a file of its own over Client.Do.
//
// It imports only the standard library and internal/apidoc (the documents
// it shares with the server, itself standard library only): the CLI must not pull
// the server into its client side (TestImportsNoServerCode).
package floeclient
