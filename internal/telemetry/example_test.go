package telemetry_test

import (
	"context"
	"fmt"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/telemetry"
)

// A Tracer observes runs (run.Options.Observer). FromEnv makes one that
// exports over OTLP; here a TracerProvider that keeps its spans in memory
// shows what a run of the run tool and one tool call make.
func Example() {
	spans := tracetest.NewInMemoryExporter()
	tr := telemetry.New(sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans)))

	// A Runner calls the observer; here, by hand.
	ctx, ro := tr.StartRun(context.Background(), &run.RunStart{ID: "r1",
		Origin: run.Origin{Surface: "run", Tool: "codemode_run"}})
	_, end := ro.StartCall(ctx, &run.CallStart{ServerID: "calc", Tool: "add"})
	end(&run.CallEnd{Outcome: run.CallOK})
	ro.EndRun(ctx, &run.RunEnd{Outcome: "ok", Response: &run.Response{}})

	for _, s := range spans.GetSpans() {
		fmt.Println(s.Name, s.SpanKind)
	}
	// Output:
	// tools/call add client
	// tools/call codemode_run server
}
