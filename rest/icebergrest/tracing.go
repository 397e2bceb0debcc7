package icebergrest

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// startCommitSpan begins the span of one table commit or transaction,
// a child of the request's: it names the branch and the tables, and holds
// the authorization, metadata file and version-store spans below it.
func (a *api) startCommitSpan(r *http.Request, wr *warehouseRef, changes []tableChange) trace.Span {
	_, span := a.tracer.Start(r.Context(), "iceberg commit")
	if !span.IsRecording() {
		return span
	}
	tables := make([]string, len(changes))
	for i, tc := range changes {
		tables[i] = tc.id.String()
	}
	span.SetAttributes(
		attribute.String("floe.warehouse", wr.wh.name),
		attribute.String("floe.branch", wr.branch),
		attribute.StringSlice("floe.tables", tables),
	)
	if len(tables) == 1 {
		span.SetAttributes(attribute.String("floe.table", tables[0]))
	}
	return span
}

// endSpan ends span, marking it failed for an error the server answers
// with a 5xx; a refused commit (409) or a bad request is the client's.
func endSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.SetAttributes(attribute.String("floe.error", err.Error()))
		if status, ok := errorStatus(err); !ok || status >= 500 {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}
