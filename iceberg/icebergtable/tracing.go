package icebergtable

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// tracerOf is the tracer of Config.TracerProvider: the no-op one when
// none is configured.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer("github.com/floe-catalog/floe/iceberg/icebergtable")
}

// startFileSpan begins the span of one metadata file read or write, a
// child of ctx's, naming the file.
func (w *Warehouse) startFileSpan(ctx context.Context, name, loc string) (context.Context, trace.Span) {
	ctx, span := w.tracer.Start(ctx, name)
	if span.IsRecording() {
		span.SetAttributes(attribute.String("floe.warehouse", w.name), attribute.String("floe.location", loc))
	}
	return ctx, span
}

// endFileSpan records the outcome of a file span: the bytes read or
// written, whether the cache answered, the error.
func endFileSpan(span trace.Span, bytes int, cacheHit bool, err error) {
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("floe.bytes", bytes), attribute.Bool("floe.cache_hit", cacheHit))
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}
