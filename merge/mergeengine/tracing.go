package mergeengine

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/floe-catalog/floe/versionstore"
)

// A merge's spans: "merge" (or "transplant") for the whole call, one
// "merge attempt" per planning (a replan when the target moved under a
// resolved table), and below an attempt that resolves tables one
// "resolve table" per table changed on both sides, holding "classify",
// "cherry-pick" (with the metadata file spans of package icebergtable)
// and "duplicate-key check", then "commit resolved" for the store's
// write of the result. The store's own write spans nest where it is
// called.

func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer("github.com/floe-catalog/floe/merge/mergeengine")
}

func (e *Engine) startSpan(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	ctx, span := e.tracer.Start(ctx, name)
	if len(attrs) > 0 && span.IsRecording() {
		span.SetAttributes(attrs...)
	}
	return ctx, span
}

// endSpan ends span with err's outcome. A refusal or a key conflict is an
// answer the merge gives, not a failure: it is an attribute.
func endSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		var ce *versionstore.ConflictError
		var re *RefusedError
		switch {
		case errors.As(err, &re):
			span.SetAttributes(attribute.Bool("floe.refused", true))
		case errors.As(err, &ce):
			span.SetAttributes(attribute.Bool("floe.conflict", true))
		default:
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

// traceOutcome ends a "resolve table" span with the table's outcome.
func traceOutcome(span trace.Span, out *TableOutcome, err error) {
	if out != nil && span.IsRecording() {
		span.SetAttributes(attribute.Bool("floe.merged", out.Merged), attribute.String("floe.reason", out.Reason))
		if out.Classification != nil {
			span.SetAttributes(attribute.String("floe.class", string(out.Classification.Class)))
		}
	}
	endSpan(span, err)
}

func resultTables(r *Result) []TableOutcome {
	if r == nil {
		return nil
	}
	return r.Tables
}
