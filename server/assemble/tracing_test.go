package assemble_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/floe-catalog/floe/conformance/testkit/pgtest"
	"github.com/floe-catalog/floe/policy"
	"github.com/floe-catalog/floe/server/assemble"
)

// TestTraceOfOneCommit follows one Iceberg table commit through the
// assembled process with the SDK's in-memory recorder: the request's
// server span continues the client's traceparent, and below it hang the
// commit (table, branch), its authorization, the metadata file read and
// write, and the version-store write with its group-commit stages. The
// access log line carries the trace id. On both store backends.
func TestTraceOfOneCommit(t *testing.T) {
	t.Run("pebble", func(t *testing.T) { traceOneCommit(t, "") })
	t.Run("postgres", func(t *testing.T) {
		c := assemble.Postgres.Need(t)
		dsn, err := c.Schema(t.Context(), pgtest.SchemaName(t.TempDir()))
		if err != nil {
			t.Fatal(err)
		}
		traceOneCommit(t, dsn)
	})
}

func traceOneCommit(t *testing.T, store string) {
	dir := t.TempDir()
	cfg := config(dir)
	cfg.Store = store
	// A bundle allowing everything, so the commit is authorized (and
	// traced as such) for the anonymous dev principal.
	bundle := filepath.Join(dir, "bundle")
	writeBundleFile(t, filepath.Join(bundle, "floe", "authz", "authz.rego"),
		"package floe.authz\n\ndecision := {\"allow\": true, \"reasons\": [\"test\"]}\n")
	cfg.Security.Policy = &assemble.Policy{Bundle: bundle}
	recorder := tracetest.NewSpanRecorder()
	deps := assemble.Deps{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(recorder))}

	logs := &syncBuffer{}
	p, err := assemble.Build(t.Context(), cfg, deps, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", cfg.HTTP.Addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, ln) }()
	base := "http://" + ln.Addr().String() + "/v1/lake"

	postTraced(t, base+"/namespaces", `{"namespace":["ns"]}`, "")
	created := postTraced(t, base+"/namespaces/ns/tables", `{"name":"t","schema":{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","type":"long","required":true}]}}`, "")
	var table struct {
		Metadata struct {
			UUID string `json:"table-uuid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(created, &table); err != nil {
		t.Fatal(err)
	}
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	postTraced(t, base+"/namespaces/ns/tables/t",
		`{"requirements":[{"type":"assert-table-uuid","uuid":"`+table.Metadata.UUID+`"}],"updates":[{"action":"set-properties","updates":{"k":"v"}}]}`,
		"00-"+traceID+"-00f067aa0ba902b7-01")
	// Serve returns once no handler runs: every span has ended.
	cancel()
	if err := <-served; err != nil {
		t.Fatal(err)
	}

	var inTrace []sdktrace.ReadOnlySpan
	for _, s := range recorder.Ended() {
		if s.SpanContext().TraceID().String() == traceID {
			inTrace = append(inTrace, s)
		}
	}
	find := func(name string, parent sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
		t.Helper()
		for _, s := range inTrace {
			if s.Name() == name && (parent == nil || s.Parent().SpanID() == parent.SpanContext().SpanID()) {
				return s
			}
		}
		var names []string
		for _, s := range inTrace {
			names = append(names, s.Name()+" (parent "+s.Parent().SpanID().String()+")")
		}
		under := "the root"
		if parent != nil {
			under = parent.Name() + " " + parent.SpanContext().SpanID().String()
		}
		t.Fatalf("no span %q under %s; the trace holds: %s", name, under, strings.Join(names, ", "))
		return nil
	}
	attr := func(s sdktrace.ReadOnlySpan, key string) attribute.Value {
		for _, kv := range s.Attributes() {
			if string(kv.Key) == key {
				return kv.Value
			}
		}
		t.Errorf("span %q has no attribute %s: %v", s.Name(), key, s.Attributes())
		return attribute.Value{}
	}

	req := find("POST /v1/{prefix}/namespaces/{namespace}/tables/{table}", nil)
	if got := req.Parent().SpanID().String(); got != "00f067aa0ba902b7" {
		t.Errorf("the request span's parent is %s, want the client's span", got)
	}
	if got := attr(req, "http.response.status_code").AsInt64(); got != http.StatusOK {
		t.Errorf("request span status code %d", got)
	}
	commit := find("iceberg commit", req)
	if got := attr(commit, "floe.table").AsString(); got != "ns.t" {
		t.Errorf("commit span table %q, want ns.t", got)
	}
	if got := attr(commit, "floe.branch").AsString(); got != "main" {
		t.Errorf("commit span branch %q, want main", got)
	}
	authz := find("authorize", commit)
	if got := attr(authz, "floe.action").AsString(); got != string(policy.ActionWriteTable) {
		t.Errorf("authorize span action %q", got)
	}
	if !attr(authz, "floe.allow").AsBool() {
		t.Error("authorize span says denied")
	}
	find("read metadata file", commit)
	written := find("write metadata file", commit)
	if !strings.HasPrefix(attr(written, "floe.location").AsString(), "file://") || attr(written, "floe.bytes").AsInt64() == 0 {
		t.Errorf("write metadata file span: %v", written.Attributes())
	}
	write := find("version store write", commit)
	if got := attr(write, "floe.ref").AsString(); got != "main" {
		t.Errorf("version store write span ref %q, want main", got)
	}
	wait := find("version store queue wait", write)
	round := find("version store round", write)
	fsync := find("version store fsync", write)
	if got := attr(fsync, "floe.batch_commits").AsInt64(); got != 1 {
		t.Errorf("fsync span batch commits %d, want 1", got)
	}
	// The stages follow each other inside the write.
	if wait.EndTime().After(round.StartTime()) || round.EndTime().After(fsync.StartTime()) ||
		write.StartTime().After(wait.StartTime()) || fsync.EndTime().After(write.EndTime()) {
		t.Errorf("stages out of order: write %v–%v, wait %v–%v, round %v–%v, fsync %v–%v",
			write.StartTime(), write.EndTime(), wait.StartTime(), wait.EndTime(), round.StartTime(), round.EndTime(), fsync.StartTime(), fsync.EndTime())
	}

	// The access log ties the request to its trace.
	var found bool
	logs.mu.Lock()
	text := logs.buf.String()
	logs.mu.Unlock()
	for _, line := range strings.Split(text, "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) != nil || rec["msg"] != "request" || rec["method"] != "POST" ||
			rec["route"] != "/v1/{prefix}/namespaces/{namespace}/tables/{table}" {
			continue
		}
		found = true
		if rec["trace_id"] != traceID || rec["span_id"] != req.SpanContext().SpanID().String() {
			t.Errorf("access log line %s lacks trace_id %s and span_id %s", line, traceID, req.SpanContext().SpanID())
		}
	}
	if !found {
		t.Errorf("no access log line of the commit in:\n%s", text)
	}
}

func writeBundleFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// postTraced POSTs body to url, with a W3C traceparent if given, and returns
// the answer, which must be 200.
func postTraced(t *testing.T, url, body, traceparent string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if traceparent != "" {
		req.Header.Set("traceparent", traceparent)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, data)
	}
	return data
}
