package mergeengine_test

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/floe-catalog/floe/iceberg/icebergtable"
	"github.com/floe-catalog/floe/merge/mergeengine"
	"github.com/floe-catalog/floe/versionstore"
)

// TestTraceOfReplannedMerge records the stages of a merge whose target
// moves between plan and commit (TestReplanWhenTargetMoves): one "merge"
// span over two attempts, the first replanned, each resolving the table
// (classified disjoint, cherry-picked, its metadata file written) and
// committing the result.
func TestTraceOfReplannedMerge(t *testing.T) {
	d := newScenario(t)
	for _, l := range []string{
		"table table=ns.t",
		"branch etl",
		"append on=etl table=ns.t day=2026-08-20 rows=2",
		"append table=ns.t day=2026-08-21 rows=1",
	} {
		d.run(t, directive(l))
	}
	recorder := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))
	wh, err := icebergtable.OpenWarehouse(icebergtable.Config{Name: "lake", Location: d.srv.Warehouse, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	st := &movingStore{Store: d.srv.Store, move: func() {
		d.run(t, directive("append table=ns.t day=2026-08-22 rows=1"))
	}}
	eng, err := mergeengine.New(mergeengine.Options{Store: st, Warehouses: []*icebergtable.Warehouse{wh}, TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	src, _ := d.srv.Store.GetRef("etl")
	tgt, _ := d.srv.Store.GetRef("main")
	if _, err := eng.MergeTables(t.Context(), versionstore.MergeRequest{
		Target: "main", ExpectedTarget: tgt.Head, From: src.Head, FromRef: "etl", Committer: "test",
	}); err != nil {
		t.Fatalf("merge: %v", err)
	}

	spans := recorder.Ended()
	children := func(parent sdktrace.ReadOnlySpan, name string) []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range spans {
			if s.Name() == name && s.Parent().SpanID() == parent.SpanContext().SpanID() {
				out = append(out, s)
			}
		}
		return out
	}
	attr := func(s sdktrace.ReadOnlySpan, key string) attribute.Value {
		for _, kv := range s.Attributes() {
			if string(kv.Key) == key {
				return kv.Value
			}
		}
		return attribute.Value{}
	}
	var names []string
	var merge sdktrace.ReadOnlySpan
	for _, s := range spans {
		names = append(names, s.Name())
		if s.Name() == "merge" {
			merge = s
		}
	}
	if merge == nil {
		t.Fatalf("no merge span among %s", strings.Join(names, ", "))
	}
	if got := attr(merge, "floe.target").AsString(); got != "main" {
		t.Errorf("merge span target %q", got)
	}
	attempts := children(merge, "merge attempt")
	if len(attempts) != 2 {
		t.Fatalf("%d merge attempts traced, want 2; spans: %s", len(attempts), strings.Join(names, ", "))
	}
	for i, a := range attempts {
		if got, want := attr(a, "floe.replan").AsBool(), i == 0; got != want {
			t.Errorf("attempt %d: replan %v, want %v", i+1, got, want)
		}
		resolved := children(a, "resolve table")
		if len(resolved) != 1 {
			t.Fatalf("attempt %d: %d resolve table spans, want 1", i+1, len(resolved))
		}
		rt := resolved[0]
		if attr(rt, "floe.table").AsString() != "ns.t" || !attr(rt, "floe.merged").AsBool() || attr(rt, "floe.class").AsString() != "disjoint" {
			t.Errorf("attempt %d: resolve table span %v", i+1, rt.Attributes())
		}
		for _, stage := range []string{"classify", "cherry-pick", "write metadata file"} {
			if len(children(rt, stage)) != 1 {
				t.Errorf("attempt %d: no %s span under resolve table", i+1, stage)
			}
		}
		if len(children(a, "commit resolved")) != 1 {
			t.Errorf("attempt %d: no commit resolved span", i+1)
		}
	}
}
