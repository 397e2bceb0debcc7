package tracing_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/floe-catalog/floe/server/tracing"
)

// clearOTEL unsets the variables FromEnv reads, for the test's duration.
func clearOTEL(t *testing.T) {
	for _, name := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"} {
		t.Setenv(name, "")
	}
}

func TestOffUnlessAsked(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		on   bool
		err  string
	}{
		{"nothing set", nil, false, ""},
		{"exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, false, ""},
		{"sdk disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false, ""},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, ""},
		{"endpoint only", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, true, ""},
		{"grpc", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, ""},
		{"unknown exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, "OTEL_TRACES_EXPORTER=zipkin"},
		{"unknown protocol", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}, false, "http/json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			clearOTEL(t)
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			p, err := tracing.FromEnv(t.Context(), "test")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("FromEnv error %v, want one naming %s", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Shutdown(t.Context())
			if p.Enabled != c.on {
				t.Fatalf("enabled %v, want %v", p.Enabled, c.on)
			}
			// The span is not ended, so Shutdown has nothing to send to
			// the collector that is not there.
			_, span := p.Tracer("test").Start(t.Context(), "probe")
			if span.IsRecording() != c.on {
				t.Errorf("span recording %v, want %v", span.IsRecording(), c.on)
			}
		})
	}
}

// TestExportsOverOTLPHTTP sends a span to a real OTLP/HTTP endpoint on
// loopback, configured only by OTEL_EXPORTER_OTLP_ENDPOINT.
func TestExportsOverOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	var got []string
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Type")+" "+string(body))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer collector.Close()
	clearOTEL(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	p, err := tracing.FromEnv(t.Context(), "v-test")
	if err != nil {
		t.Fatal(err)
	}
	_, span := p.Tracer("test").Start(t.Context(), "exported-span")
	span.End()
	if err := p.Shutdown(t.Context()); err != nil { // flushes the batch
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || !strings.HasPrefix(got[0], "POST /v1/traces application/x-protobuf") ||
		!strings.Contains(got[0], "exported-span") || !strings.Contains(got[0], "floe") {
		t.Fatalf("collector received %q, want one OTLP export of the span from service floe", got)
	}
}
