package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/mux"
	"go.opentelemetry.io/otel/trace"
)

// RequestIDHeader carries the request id in both directions: a caller's id is
// kept if it is sane, otherwise a UUID is generated; the response always
// carries the id used in the logs. The header is set before the handler
// runs, so handlers that do not import this package can read the id from
// w.Header().
const RequestIDHeader = "X-Request-Id"

// routeUnmatched labels requests no route matched (404, 405), so unknown
// paths never become metric series of their own.
const routeUnmatched = "unmatched"

// statusClientClosedRequest is logged for requests whose connection closed
// before any response was written.
const statusClientClosedRequest = 499

type requestInfoKey struct{}

// requestInfo travels in the request context from ServeHTTP down to the
// router, which records the matched route template in it.
type requestInfo struct {
	id    string
	route string
}

// RequestID returns the id of the request ctx belongs to, or "" outside a
// request served by Server.
func RequestID(ctx context.Context) string {
	if info, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		return info.id
	}
	return ""
}

// ServeHTTP runs every request through the shared middleware, outermost
// first: request id, access log and metrics, panic recovery, body limit, and
// finally the router. The order matters: a panic is recovered inside the
// access log so it is logged and counted as the 500 the client received.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	info := &requestInfo{id: requestIDFrom(r), route: routeUnmatched}
	w.Header().Set(RequestIDHeader, info.id)
	ctx, span := s.startSpan(r)
	r = r.WithContext(context.WithValue(ctx, requestInfoKey{}, info))
	rec := &responseRecorder{ResponseWriter: w}

	defer s.logAndMeasure(rec, r, info, start, span)
	defer s.recoverPanic(rec, r)
	s.serveLimited(rec, r)
}

// requestIDFrom keeps the caller's request id when it is short printable
// ASCII (it ends up in logs and headers), and generates one otherwise.
func requestIDFrom(r *http.Request) string {
	id := r.Header.Get(RequestIDHeader)
	if id == "" || len(id) > 128 {
		return uuid.NewString()
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return uuid.NewString()
		}
	}
	return id
}

// captureRoute is router middleware: it runs only once a route matched and
// records that route's path template for the access log and metrics.
func captureRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo); ok {
			if route := mux.CurrentRoute(r); route != nil {
				if tpl, err := route.GetPathTemplate(); err == nil {
					info.route = tpl
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) logAndMeasure(rec *responseRecorder, r *http.Request, info *requestInfo, start time.Time, span trace.Span) {
	elapsed := time.Since(start)
	status := rec.status
	switch {
	case status == 0 && r.Context().Err() != nil:
		// Nothing was written and the connection is gone (the client left,
		// or shutdown cut it): no status reached anyone. 499 is nginx's
		// "client closed request", so such requests do not count as 200s.
		status = statusClientClosedRequest
	case status == 0:
		// The handler wrote nothing; net/http answers 200 with no body.
		status = http.StatusOK
	}
	s.metrics.observe(info.route, r.Method, status, elapsed)
	endSpan(span, r, info, status)

	level := slog.LevelInfo
	if isProbe(info.route) {
		// Probes arrive every few seconds from orchestrators; logging them
		// at info would drown the requests that matter.
		level = slog.LevelDebug
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("route", info.route),
		slog.String("path", r.URL.EscapedPath()),
		slog.Int("status", status),
		slog.Int64("bytes", rec.bytes),
		slog.Duration("duration", elapsed),
		slog.String("request_id", info.id),
	}
	// The trace id ties the log line to the request's trace: floe's own
	// when tracing is on, else the caller's traceparent, if it sent one.
	if sc := span.SpanContext(); sc.IsValid() {
		attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	s.logger.LogAttrs(r.Context(), level, "request", attrs...)
}

func isProbe(route string) bool {
	return route == "/healthz" || route == "/readyz" || route == "/metrics"
}

// recoverPanic turns a handler panic into a logged stack trace and, if the
// response has not started, a 500 with a JSON error. It must be deferred
// directly so that its recover call stops the panic.
func (s *Server) recoverPanic(rec *responseRecorder, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		// The handler asked net/http to abort the connection; let it.
		panic(v)
	}
	s.logger.ErrorContext(r.Context(), "panic serving request",
		"method", r.Method,
		"path", r.URL.EscapedPath(),
		"request_id", RequestID(r.Context()),
		"panic", fmt.Sprint(v),
		"stack", string(debug.Stack()),
	)
	if rec.status != 0 {
		// Part of the response is already on the wire; the client sees a
		// truncated body, which is the best that can be done now.
		return
	}
	writeError(rec, http.StatusInternalServerError, "InternalServerError",
		"internal server error; request id "+RequestID(r.Context()))
}

// serveLimited enforces the body size limit and the bound on body bytes
// in flight. A declared Content-Length over the limit is refused before the
// handler runs, and so is one that does not fit the bytes in flight (503,
// Retry-After). A body without a declared length is cut at the limit and
// takes its share of the bytes in flight as it is read; if the handler
// reads past either, whatever it answers is replaced by the same 413 or
// 503, so every API reports them the same way without checking for them.
// A request's bytes stay counted until its handler returns.
func (s *Server) serveLimited(w http.ResponseWriter, r *http.Request) {
	limit := s.cfg.MaxBodyBytes
	if r.ContentLength > limit {
		writeTooLarge(w, limit)
		return
	}
	if r.Body == nil || r.Body == http.NoBody {
		s.router.ServeHTTP(w, r)
		return
	}
	body := &limitedBody{ReadCloser: http.MaxBytesReader(w, r.Body, limit)}
	if b := s.bodies; b != nil {
		if r.ContentLength > 0 {
			if !b.reserve(r.ContentLength) {
				b.refused.Inc()
				writeBusy(w, b.limit)
				return
			}
			defer b.release(r.ContentLength)
		} else {
			body.budget = b
			defer func() { b.release(body.reserved.Load()) }()
		}
	}
	r.Body = body
	lw := &tooLargeWriter{ResponseWriter: w, body: body, limit: limit}
	s.router.ServeHTTP(lw, r)
	lw.decide()
}

func writeTooLarge(w http.ResponseWriter, limit int64) {
	writeError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge",
		fmt.Sprintf("request body exceeds the limit of %d bytes", limit))
}

// limitedBody remembers whether a read ran into the size limit or, for a
// body without a declared length, past the bytes in flight.
type limitedBody struct {
	io.ReadCloser
	exceeded atomic.Bool

	budget     *bodyBudget // nil: the body's bytes were reserved up front, or nothing bounds them
	reserved   atomic.Int64
	overBudget atomic.Bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
		b.exceeded.Store(true)
	}
	if n > 0 && b.budget != nil {
		if !b.budget.reserve(int64(n)) {
			if !b.overBudget.Swap(true) {
				b.budget.refused.Inc()
			}
			return 0, errOverBudget
		}
		b.reserved.Add(int64(n))
	}
	return n, err
}
