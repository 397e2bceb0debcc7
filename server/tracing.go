package server

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the server's spans' instrumentation scope.
const tracerName = "github.com/floe-catalog/floe/server"

// propagator reads a caller's W3C traceparent (and baggage), so a
// request's span continues the client's trace. It is a value, not the
// global propagator: nothing here reads process-wide OpenTelemetry state.
var propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// startSpan begins a request's server span, named by its method until the
// route is known. Probes get none: orchestrators call them every few
// seconds. With the no-op provider the span records nothing and only the
// caller's trace id, if it sent one, reaches the access log.
func (s *Server) startSpan(r *http.Request) (context.Context, trace.Span) {
	ctx := propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	switch r.URL.Path {
	case "/healthz", "/readyz", "/metrics":
		return ctx, trace.SpanFromContext(ctx)
	}
	ctx, span := s.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("url.path", r.URL.EscapedPath()),
		)
	}
	return ctx, span
}

// endSpan names the span by its route (GET /v1/{prefix}/namespaces) and
// records the outcome. A 5xx is an error; a 4xx is the client's.
func endSpan(span trace.Span, r *http.Request, info *requestInfo, status int) {
	if !span.IsRecording() {
		return
	}
	span.SetName(r.Method + " " + info.route)
	span.SetAttributes(
		attribute.String("http.route", info.route),
		attribute.Int("http.response.status_code", status),
		attribute.String("floe.request_id", info.id),
	)
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}
