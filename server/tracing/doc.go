// Package tracing builds a floe server's OpenTelemetry tracer provider from
// the OTEL_* variables.
//
// It builds the OpenTelemetry tracer provider of a floe server from the
// standard OTEL_* environment variables: off unless they ask for an OTLP
// exporter, and then exporting over OTLP (HTTP or gRPC) in batches.
//
// It owns only that construction. Packages that trace take a
// trace.TracerProvider in their options (nil meaning the no-op one) from
// the composition root; none fetches a global provider, and this package
// sets none. It must not import any floe package.
package tracing
