// Package benchhttp is what floe's two peer benchmarks share of their HTTP
// clients.
//
// It is what floe's two peer benchmarks (conformance/testkit/peerbench on
// Nessie's REST API v2, conformance/testkit/icebergpeers on the Iceberg REST
// API) share of their clients: the keep-alive connection pool, one JSON
// request and its answer (a non-2xx answer is a *StatusError), and the
// timings of a workload (Stats). Each benchmark keeps its own API's paths
// and types.
//
// It imports only the standard library: the benchmarks must drive floe
// exactly as they drive its peers, with none of floe's own code.
package benchhttp
