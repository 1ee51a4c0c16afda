package telemetry_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/telemetry"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// receiver is an in-process OTLP trace receiver: it keeps the spans it is
// sent, over HTTP (protobuf) or gRPC.
type receiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu    sync.Mutex
	spans []*tracepb.Span
	res   []*tracepb.ResourceSpans
}

func (r *receiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		r.res = append(r.res, rs)
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" || req.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want protobuf at /v1/traces", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var in coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &in); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out, _ := r.Export(req.Context(), &in)
	b, _ := proto.Marshal(out)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

// start serves the receiver over protocol and points the OTEL_* variables
// at it.
func (r *receiver) start(t *testing.T, protocol string) {
	t.Helper()
	switch protocol {
	case "http/protobuf":
		hs := httptest.NewServer(r)
		t.Cleanup(hs.Close)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", hs.URL)
	case "grpc":
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		gs := grpc.NewServer()
		coltracepb.RegisterTraceServiceServer(gs, r)
		go gs.Serve(ln)
		t.Cleanup(gs.Stop)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
		t.Setenv("OTEL_EXPORTER_OTLP_INSECURE", "true")
	}
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
	t.Setenv("OTEL_SERVICE_NAME", "codemode-under-test")
}

// metaServer is an MCP server whose tool add keeps the _meta of each call.
func metaServer(seen *sync.Map) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
	s.AddTool(&mcp.Tool{Name: "add", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ A, B float64 }
			json.Unmarshal(req.Params.Arguments, &in)
			tp, _ := req.Params.Meta["traceparent"].(string)
			seen.Store(tp, true)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil
		})
	return s
}

const (
	clientTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpan  = "00f067aa0ba902b7"
)

// A run served over MCP is a span whose parent is the client's traceparent
// (from the request's _meta), with a child span per tool call (two in
// parallel, one after), each passing its own context on to the upstream in
// _meta; the spans reach an in-process OTLP receiver over HTTP and gRPC.
func TestSpans(t *testing.T) {
	for _, protocol := range []string{"http/protobuf", "grpc"} {
		t.Run(protocol, func(t *testing.T) {
			rcv := &receiver{}
			rcv.start(t, protocol)
			tr, err := telemetry.FromEnv(context.Background(), &telemetry.Options{Version: "1.2.3"})
			if err != nil || tr == nil {
				t.Fatalf("FromEnv: %v, %v", tr, err)
			}
			var seen sync.Map
			cfg := testutil.Config(config.Server{Name: "calc", Transport: config.Stdio, Command: "in-memory"})
			mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"calc": metaServer(&seen)}),
				Logger: slog.New(slog.DiscardHandler)})
			defer mgr.Close()
			srv := serve.New(run.New(cfg, catalog.New(mgr), mgr, &run.Options{Observer: tr}), mgr, nil)
			ctx := testutil.Context(t)
			srv.Start(ctx)
			ct, st := mcp.NewInMemoryTransports()
			ss, err := srv.MCP().Connect(ctx, st, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer ss.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "tracing-client", Version: "1"}, nil).Connect(ctx, ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{
				Meta: mcp.Meta{"traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"},
				Name: "codemode_run",
				Arguments: map[string]any{"code": `import { add } from "@codemode/servers/calc";
const [x, y] = await Promise.all([add({ a: 1, b: 2 }), add({ a: 3, b: 4 })]);
globalThis.__codemode_result__ = await add({ a: Number(x), b: Number(y) });`},
			})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %v", res, err)
			}
			if err := tr.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}

			rcv.mu.Lock()
			spans := slices.Clone(rcv.spans)
			rcv.mu.Unlock()
			if len(spans) != 4 {
				t.Fatalf("%d spans, want 4 (a run and three calls): %v", len(spans), spans)
			}
			var runSpan *tracepb.Span
			var calls []*tracepb.Span
			for _, s := range spans {
				if hex.EncodeToString(s.TraceId) != clientTrace {
					t.Errorf("span %q in trace %x, want the client's", s.Name, s.TraceId)
				}
				switch s.Name {
				case "tools/call codemode_run":
					runSpan = s
				case "tools/call add":
					calls = append(calls, s)
				default:
					t.Errorf("unexpected span %q", s.Name)
				}
			}
			if runSpan == nil || len(calls) != 3 {
				t.Fatalf("run span %v, %d call spans", runSpan, len(calls))
			}
			if got := hex.EncodeToString(runSpan.ParentSpanId); got != clientSpan {
				t.Errorf("run span's parent %s, want the client's %s", got, clientSpan)
			}
			if runSpan.Kind != tracepb.Span_SPAN_KIND_SERVER {
				t.Errorf("run span kind %v", runSpan.Kind)
			}
			attrs := attrMap(runSpan.Attributes)
			for k, v := range map[string]string{"codemode.surface": "run", "mcp.method.name": "tools/call", "gen_ai.tool.name": "codemode_run",
				"codemode.outcome": "ok", "codemode.tool_calls": "3"} {
				if attrs[k] != v {
					t.Errorf("run span %s = %q, want %q", k, attrs[k], v)
				}
			}
			if len(attrs["codemode.run.id"]) != 36 || len(attrs["codemode.code.sha256"]) != 16 {
				t.Errorf("run span attributes %v", attrs)
			}
			for _, c := range calls {
				if hex.EncodeToString(c.ParentSpanId) != hex.EncodeToString(runSpan.SpanId) {
					t.Errorf("call span's parent %x, want the run's %x", c.ParentSpanId, runSpan.SpanId)
				}
				a := attrMap(c.Attributes)
				if a["codemode.server.id"] != "calc" || a["gen_ai.tool.name"] != "add" || a["codemode.outcome"] != "ok" || a["gen_ai.operation.name"] != "execute_tool" {
					t.Errorf("call span attributes %v", a)
				}
				if c.Kind != tracepb.Span_SPAN_KIND_CLIENT || c.StartTimeUnixNano < runSpan.StartTimeUnixNano || c.EndTimeUnixNano > runSpan.EndTimeUnixNano {
					t.Errorf("call span %v", c)
				}
				// The upstream saw this call's own span as its parent.
				tp := "00-" + clientTrace + "-" + hex.EncodeToString(c.SpanId) + "-01"
				if _, ok := seen.Load(tp); !ok {
					t.Errorf("the upstream never saw traceparent %s", tp)
				}
			}
			// The two parallel calls overlap; the third starts after both.
			slices.SortFunc(calls, func(a, b *tracepb.Span) int { return int(a.StartTimeUnixNano - b.StartTimeUnixNano) })
			if calls[2].StartTimeUnixNano < max(calls[0].EndTimeUnixNano, calls[1].EndTimeUnixNano) {
				t.Errorf("the sequential call started before the parallel ones ended")
			}
			rcv.mu.Lock()
			res0 := rcv.res[0]
			rcv.mu.Unlock()
			if ra := attrMap(res0.Resource.Attributes); ra["service.name"] != "codemode-under-test" || ra["service.version"] != "1.2.3" {
				t.Errorf("resource %v", ra)
			}
		})
	}
}

func attrMap(kvs []*commonpb.KeyValue) map[string]string {
	out := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.Key] = fmt.Sprint(v.IntValue)
		default:
			out[kv.Key] = kv.Value.String()
		}
	}
	return out
}

// A failed call's span says why, and so does a failed run's.
func TestErrorSpans(t *testing.T) {
	rcv := &receiver{}
	rcv.start(t, "http/protobuf")
	tr, err := telemetry.FromEnv(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var seen sync.Map
	cfg := testutil.Config(config.Server{Name: "calc", Transport: config.Stdio, Command: "in-memory"})
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"calc": metaServer(&seen)}),
		Logger: slog.New(slog.DiscardHandler)})
	defer mgr.Close()
	r := run.New(cfg, catalog.New(mgr), mgr, &run.Options{Observer: tr})
	// No client trace context: the run's span is a root.
	resp := r.Run(run.WithOrigin(context.Background(), run.Origin{Surface: "cli"}), run.Request{Code: `import { add } from "@codemode/servers/calc";
await add({ a: "x" });`})
	if !resp.Failed() {
		t.Fatal("the run should fail")
	}
	tr.Shutdown(context.Background())
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.spans) != 2 {
		t.Fatalf("%d spans", len(rcv.spans))
	}
	for _, s := range rcv.spans {
		a := attrMap(s.Attributes)
		switch s.Name {
		case "codemode.run":
			if len(s.ParentSpanId) != 0 || a["codemode.outcome"] != "UNCAUGHT_EXCEPTION" || a["error.type"] != "UNCAUGHT_EXCEPTION" ||
				s.Status.Code != tracepb.Status_STATUS_CODE_ERROR || a["codemode.surface"] != "cli" {
				t.Errorf("run span %v", s)
			}
		case "tools/call add":
			if a["codemode.outcome"] != "invalid_input" || a["error.type"] != "SchemaValidationError" || s.Status.Code != tracepb.Status_STATUS_CODE_ERROR ||
				!strings.HasPrefix(s.Status.Message, "SchemaValidationError: invalid input at /a") {
				t.Errorf("call span %v", s)
			}
		default:
			t.Errorf("span %q", s.Name)
		}
	}
}

// Tracing is off unless the OTEL_* variables ask for it; settings it
// cannot honour are errors that name the variable.
func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env     map[string]string
		on      bool
		errWith string
	}{
		{env: nil},
		{env: map[string]string{"OTEL_SERVICE_NAME": "x"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:1/v1/traces"}, on: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, on: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"}},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, errWith: "OTEL_TRACES_EXPORTER"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, errWith: "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "udp"}, errWith: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
	} {
		tr, err := telemetry.FromEnv(context.Background(), &telemetry.Options{Getenv: func(k string) string { return tc.env[k] }})
		switch {
		case tc.errWith != "":
			if err == nil || !strings.Contains(err.Error(), tc.errWith) {
				t.Errorf("%v: err %v, want one naming %s", tc.env, err, tc.errWith)
			}
		case err != nil:
			t.Errorf("%v: %v", tc.env, err)
		case (tr != nil) != tc.on:
			t.Errorf("%v: on = %v, want %v", tc.env, tr != nil, tc.on)
		}
		if tr != nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			tr.Shutdown(ctx)
			cancel()
		}
	}
}
