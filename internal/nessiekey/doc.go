// Package nessiekey holds the path encoding of Nessie content keys that
// server and client share.
//
// It holds the path encoding of Nessie content keys, shared by the server's
// Nessie API (rest/nessie) and the CLI's client (internal/nessieclient) so
// the two can never disagree. It imports nothing of floe.
package nessiekey
