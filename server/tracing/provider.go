package tracing

import (
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Provider is the process's tracer provider and how to flush it.
type Provider struct {
	trace.TracerProvider
	// Enabled says whether spans are exported; when not, TracerProvider
	// is the no-op provider, which costs next to nothing.
	Enabled bool
	// Exporter describes where spans go ("otlp http/protobuf"), for the
	// start-up log.
	Exporter string
	shutdown func(context.Context) error
}

// Shutdown flushes the spans still buffered and stops the exporter. It
// is for after the server has drained, so the last requests' spans go
// out too.
func (p *Provider) Shutdown(ctx context.Context) error {
	if p.shutdown == nil {
		return nil
	}
	return p.shutdown(ctx)
}

// FromEnv builds the tracer provider the OTEL_* variables describe.
// Tracing is off unless OTEL_TRACES_EXPORTER is otlp, or an OTLP endpoint
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set
// and OTEL_TRACES_EXPORTER is not none; OTEL_SDK_DISABLED=true turns it
// off whatever else is set. The OTLP exporters read their own variables
// (endpoint, headers, timeout, TLS), OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL
// picks http/protobuf (the default) or grpc, the SDK reads the sampler
// (OTEL_TRACES_SAMPLER) and batching (OTEL_BSP_*) ones, and
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override the resource,
// whose service.name is floe.
func FromEnv(ctx context.Context, version string) (*Provider, error) {
	off := &Provider{TracerProvider: noop.NewTracerProvider()}
	if strings.EqualFold(strings.TrimSpace(os.Getenv("OTEL_SDK_DISABLED")), "true") {
		return off, nil
	}
	endpoint := os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	switch exp := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "":
		if !endpoint {
			return off, nil
		}
	case "none":
		return off, nil
	case "otlp":
	default:
		return nil, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: floe exports traces with otlp only (or none)", exp)
	}

	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	if protocol == "" {
		protocol = "http/protobuf"
	}
	var exporter sdktrace.SpanExporter
	var err error
	switch protocol {
	case "http/protobuf":
		exporter, err = otlptracehttp.New(ctx)
	case "grpc":
		exporter, err = otlptracegrpc.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%s: floe exports traces over http/protobuf or grpc", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter (%s): %w", protocol, err)
	}
	// Later options win: the variables override floe's own attributes.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "floe"), attribute.String("service.version", version)),
		resource.WithTelemetrySDK(),
		resource.WithHost(),
		resource.WithFromEnv(),
	)
	if err != nil {
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	return &Provider{TracerProvider: tp, Enabled: true, Exporter: "otlp " + protocol, shutdown: tp.Shutdown}, nil
}
