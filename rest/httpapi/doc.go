// Package httpapi is the HTTP adapter the Iceberg, Nessie and floe APIs share.
//
// It owns one handler signature that returns an error, one route type,
// authentication wrapped around the routes in one place, and their
// registration on the server's router, with a cheap rejection of routes
// whose literal path segments differ so that the order of registration
// costs no regular-expression matches.
//
// It knows no API's error model: each API plugs in its own error encoder
// (the Iceberg ErrorModel, Nessie's NessieError, floe's {"error": ...}), so
// every answer keeps its wording. It asks no policy (rest/authz does) and
// imports neither the store nor any other floe package: the standard
// library and gorilla/mux only.
package httpapi
