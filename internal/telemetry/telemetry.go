// Package telemetry traces runs with OpenTelemetry: a span per run and a
// child span per tool call, exported over OTLP (HTTP or gRPC) by the
// official Go SDK.
//
// Start with [FromEnv], which reads only the standard OTEL_* environment
// variables and returns nil (tracing off) when none asks for traces: set
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), or
// OTEL_TRACES_EXPORTER=otlp, to turn it on. OTEL_EXPORTER_OTLP_PROTOCOL (or
// its _TRACES_ form) picks "http/protobuf" (the default) or "grpc"; the
// exporters read the endpoint, headers, timeout, compression and TLS
// settings themselves, the SDK the sampler (OTEL_TRACES_SAMPLER) and the
// batching (OTEL_BSP_*), the resource OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES. OTEL_SDK_DISABLED=true and
// OTEL_TRACES_EXPORTER=none turn it off.
//
// A [*Tracer] is a run.Observer. Trace context follows MCP's convention
// (SEP-414: W3C trace context under the unprefixed traceparent, tracestate
// and baggage keys of params._meta) both ways: a client's traceparent in
// the request's _meta becomes the run span's parent, and each tool call
// passes its own span's context on to the upstream in the call's _meta.
package telemetry

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// Instrumentation scope of the spans.
const scope = "github.com/codemode-mcp/codemode"

// Options configure a Tracer. All fields are optional.
type Options struct {
	// Version is the service.version of the resource.
	Version string
	// Getenv reads the environment. Default os.Getenv. (The OTLP
	// exporters read their own settings from the process environment.)
	Getenv func(string) string
}

// Tracer traces runs. It is safe for concurrent use.
type Tracer struct {
	tp     trace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
	// shutdown flushes and stops the provider FromEnv made.
	shutdown func(context.Context) error
}

// ErrConfig is wrapped by FromEnv's errors about the OTEL_* variables.
var ErrConfig = errors.New("OpenTelemetry configuration")

// FromEnv returns a Tracer exporting over OTLP as the OTEL_* variables say,
// or nil when they do not ask for traces. The error names the variable at
// fault and what it may be.
func FromEnv(ctx context.Context, opts *Options) (*Tracer, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if v := strings.TrimSpace(getenv("OTEL_SDK_DISABLED")); v != "" {
		if off, err := strconv.ParseBool(v); err == nil && off {
			return nil, nil
		}
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return nil, nil
	case "":
		if getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return nil, nil
		}
	case "otlp":
	default:
		return nil, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%q is not supported; codemode exports traces over OTLP only (otlp or none)", ErrConfig, exp)
	}
	proto := strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	if proto == "" {
		proto, name = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL")), "OTEL_EXPORTER_OTLP_PROTOCOL"
	}
	var client otlptrace.Client
	switch proto {
	case "", "http/protobuf":
		client = otlptracehttp.NewClient()
	case "grpc":
		client = otlptracegrpc.NewClient()
	default:
		return nil, fmt.Errorf("%w: %s=%q is not supported; use http/protobuf (the default) or grpc", ErrConfig, name, proto)
	}
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("%w: the OTLP trace exporter: %v", ErrConfig, err)
	}
	attrs := []attribute.KeyValue{semconv.ServiceName("codemode")}
	if o.Version != "" {
		attrs = append(attrs, semconv.ServiceVersion(o.Version))
	}
	// FromEnv last: OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES win.
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		// A malformed OTEL_RESOURCE_ATTRIBUTES still yields a usable
		// resource (the parts that parsed); say what was wrong.
		if res == nil {
			return nil, fmt.Errorf("%w: OTEL_RESOURCE_ATTRIBUTES: %v", ErrConfig, err)
		}
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := New(tp)
	t.shutdown = tp.Shutdown
	return t, nil
}

// New returns a Tracer that makes its spans with tp.
func New(tp trace.TracerProvider) *Tracer {
	return &Tracer{tp: tp, tracer: tp.Tracer(scope),
		prop: propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})}
}

// Shutdown exports the spans not exported yet and stops the exporter. It
// does nothing for a Tracer made by New.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	return t.shutdown(ctx)
}

// metaCarrier reads and writes trace context in an MCP _meta object.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Attribute keys of codemode's own.
const (
	attrRunID     = attribute.Key("codemode.run.id")
	attrSurface   = attribute.Key("codemode.surface")
	attrCodeHash  = attribute.Key("codemode.code.sha256")
	attrCodeBytes = attribute.Key("codemode.code.bytes")
	attrOutcome   = attribute.Key("codemode.outcome")
	attrCalls     = attribute.Key("codemode.tool_calls")
	attrServer    = attribute.Key("codemode.server.id")
	attrOffset    = attribute.Key("codemode.call.offset_ms")
	// The MCP semantic conventions' keys.
	attrMethod    = attribute.Key("mcp.method.name")
	attrSession   = attribute.Key("mcp.session.id")
	attrToolName  = attribute.Key("gen_ai.tool.name")
	attrOperation = attribute.Key("gen_ai.operation.name")
	attrErrorType = attribute.Key("error.type")
)

// StartRun implements run.Observer: it starts the run's span, a child of
// the client's trace context when the request's _meta carries one.
func (t *Tracer) StartRun(ctx context.Context, s *run.RunStart) (context.Context, run.RunObserver) {
	if len(s.Origin.Meta) > 0 {
		ctx = t.prop.Extract(ctx, metaCarrier(s.Origin.Meta))
	}
	sum := sha256.Sum256([]byte(s.Request.Code))
	attrs := []attribute.KeyValue{
		attrRunID.String(s.ID),
		attrCodeHash.String(hex.EncodeToString(sum[:8])),
		attrCodeBytes.Int(len(s.Request.Code)),
	}
	name := "codemode.run"
	kind := trace.SpanKindInternal
	if o := s.Origin; o.Surface != "" {
		attrs = append(attrs, attrSurface.String(o.Surface))
	}
	if o := s.Origin; o.Tool != "" {
		// The run serves an MCP tools/call: the server span of that call.
		name, kind = "tools/call "+o.Tool, trace.SpanKindServer
		attrs = append(attrs, attrMethod.String("tools/call"), attrToolName.String(o.Tool))
	}
	if o := s.Origin; o.Session != "" {
		attrs = append(attrs, attrSession.String(o.Session))
	}
	ctx, span := t.tracer.Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(s.Start), trace.WithAttributes(attrs...))
	return ctx, &runSpan{t: t, span: span}
}

type runSpan struct {
	t    *Tracer
	span trace.Span
}

// StartCall starts the tool call's client span and passes its context on
// to the upstream in the call's _meta.
func (r *runSpan) StartCall(ctx context.Context, c *run.CallStart) (context.Context, func(*run.CallEnd)) {
	ctx, span := r.t.tracer.Start(ctx, "tools/call "+c.Tool, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(c.Start),
		trace.WithAttributes(attrMethod.String("tools/call"), attrToolName.String(c.Tool), attrOperation.String("execute_tool"),
			attrServer.String(c.ServerID), attrOffset.Int64(c.Offset.Milliseconds())))
	meta := metaCarrier{}
	r.t.prop.Inject(ctx, meta)
	if len(meta) > 0 {
		ctx = upstream.WithCallMeta(ctx, meta)
	}
	return ctx, func(e *run.CallEnd) {
		span.SetAttributes(attrOutcome.String(e.Outcome))
		if e.Outcome != run.CallOK {
			typ := string(e.Class)
			if typ == "" {
				typ = e.Outcome
			}
			span.SetAttributes(attrErrorType.String(typ))
			span.SetStatus(codes.Error, e.Error)
		}
		span.End(trace.WithTimestamp(c.Start.Add(e.Duration)))
	}
}

func (r *runSpan) EndRun(ctx context.Context, e *run.RunEnd) {
	r.span.SetAttributes(attrOutcome.String(e.Outcome), attrCalls.Int(len(e.Response.ToolTrace)))
	if e.Outcome != "ok" {
		r.span.SetAttributes(attrErrorType.String(e.Outcome))
		msg := e.Outcome
		for _, d := range e.Response.Diagnostics {
			if string(d.Code) == e.Outcome {
				// The diagnostic's message is redacted, and may quote the
				// script's own error text, not its data.
				msg = d.Message
				break
			}
		}
		r.span.SetStatus(codes.Error, msg)
	}
	r.span.End()
}
