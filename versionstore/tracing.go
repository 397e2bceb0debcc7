package versionstore

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// A write's span ("version store write") lives on the caller's
// goroutine, from queuing to the durable result. The committer, which
// serves many writes per round, adds each traced write's stages below it
// after the fact, with their own start and end times: "version store
// queue wait" (queued until its round applies it), "version store round"
// (applying it in memory) and "version store fsync" (the round's synced
// batch; one per attempt, so a batch redone after another replica moved
// the ref shows twice). Untraced writes (the no-op provider) cost one
// span start and nothing in the committer.

func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer("github.com/floe-catalog/floe/versionstore")
}

func (s *Store) startWriteSpan(ctx context.Context, ref string) (context.Context, trace.Span) {
	ctx, span := s.tracer.Start(ctx, "version store write")
	if span.IsRecording() {
		span.SetAttributes(attribute.String("floe.ref", ref))
	}
	return ctx, span
}

// endWriteSpan records a write's outcome; a conflict is the caller's
// business (it is answered as one), not a failure of the store.
func endWriteSpan(span trace.Span, err error) {
	if err == nil || !span.IsRecording() {
		return
	}
	if _, conflict := errors.AsType[*ConflictError](err); conflict {
		span.SetAttributes(attribute.Bool("floe.conflict", true))
		return
	}
	span.SetStatus(codes.Error, err.Error())
}

// traceApply records r's queue wait and its application as the
// position-th write of its round, which ended now.
func (s *Store) traceApply(r *writeRequest, applying time.Time, position int, err error) {
	now := time.Now()
	_, wait := s.tracer.Start(r.ctx, "version store queue wait", trace.WithTimestamp(r.queued))
	wait.End(trace.WithTimestamp(applying))
	_, round := s.tracer.Start(r.ctx, "version store round", trace.WithTimestamp(applying),
		trace.WithAttributes(attribute.Int("floe.round_position", position)))
	if err != nil {
		round.SetAttributes(attribute.String("floe.error", err.Error()))
	}
	round.End(trace.WithTimestamp(now))
}

// traceDurable records the round's batch write, begun at writing and
// just finished, on every traced write it carries.
func (p *preparedRound) traceDurable(writing time.Time) {
	var now time.Time
	for _, r := range p.round {
		if !r.traced || r.err != nil {
			continue
		}
		if now.IsZero() {
			now = time.Now()
		}
		_, span := p.s.tracer.Start(r.ctx, "version store fsync", trace.WithTimestamp(writing),
			trace.WithAttributes(
				attribute.Int("floe.batch_writes", len(p.round)),
				attribute.Int("floe.batch_commits", p.commits),
			))
		if p.err != nil {
			span.SetStatus(codes.Error, p.err.Error())
		}
		span.End(trace.WithTimestamp(now))
	}
}
