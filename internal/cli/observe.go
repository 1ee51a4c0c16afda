package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/codemode-mcp/codemode/internal/buildinfo"
	"github.com/codemode-mcp/codemode/internal/metrics"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/telemetry"
)

// observers are what watches a command's runs: traces (when the OTEL_*
// variables ask for them), metrics (served by serve --http) and the run
// history.
type observers struct {
	tracer  *telemetry.Tracer
	metrics *metrics.Metrics
}

// observe sets up the observers of g's runs; withMetrics adds Prometheus
// metrics. A bad OTEL_* setting is a usage error: nothing is traced
// silently wrong.
func (e *env) observe(g *gateway, withMetrics bool) (*observers, error) {
	o := &observers{}
	t, err := telemetry.FromEnv(e.ctx, &telemetry.Options{Version: buildinfo.Version()})
	if err != nil {
		return nil, fmt.Errorf("%w (see the OTEL_* variables in the README)", err)
	}
	if t != nil {
		o.tracer = t
		g.log.Info("tracing runs with OpenTelemetry (OTLP)")
	}
	if withMetrics {
		o.metrics = metrics.New(&metrics.Options{Upstreams: g.mgr.Statuses})
	}
	return o, nil
}

// observer is the run.Observer of them all (nil if none).
func (o *observers) observer() run.Observer {
	var obs []run.Observer
	if o.metrics != nil {
		obs = append(obs, o.metrics)
	}
	if o.tracer != nil {
		obs = append(obs, o.tracer)
	}
	return run.Observers(obs...)
}

// close flushes what is still buffered (spans not exported yet).
func (o *observers) close() {
	if o.tracer != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		o.tracer.Shutdown(ctx)
	}
}
