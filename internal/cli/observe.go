package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/codemode-mcp/codemode/internal/buildinfo"
	"github.com/codemode-mcp/codemode/internal/history"
	"github.com/codemode-mcp/codemode/internal/metrics"
	"github.com/codemode-mcp/codemode/internal/redact"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/telemetry"
)

// observers are what watches a command's runs: traces (when the OTEL_*
// variables ask for them), metrics (served by serve --http) and the run
// history (unless codemode.history.enabled is false).
type observers struct {
	tracer  *telemetry.Tracer
	metrics *metrics.Metrics
	history *history.Recorder
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
	if h := g.cfg.History; !h.Disabled {
		o.history = history.New(g.store.History(), &history.Options{Payloads: h.Payloads, MaxAge: h.MaxAge, MaxBytes: h.MaxBytes,
			Redact: redact.ForServers(g.cfg.Servers), Logger: g.log})
	}
	if withMetrics {
		mo := &metrics.Options{Upstreams: g.mgr.Statuses}
		if o.history != nil {
			mo.HistoryDropped, mo.HistoryQueued = o.history.Dropped, o.history.Queued
		}
		o.metrics = metrics.New(mo)
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
	if o.history != nil {
		obs = append(obs, o.history)
	}
	return run.Observers(obs...)
}

// record adds the history's capture of replay bundles (with payloads) to
// a run.Options.Record hook (which may be nil).
func (o *observers) record(next func(*run.Recording) func(*sandbox.Result, *run.Response)) func(*run.Recording) func(*sandbox.Result, *run.Response) {
	if o.history == nil || !o.history.Payloads() {
		return next
	}
	if next == nil {
		return o.history.Capture
	}
	return func(info *run.Recording) func(*sandbox.Result, *run.Response) {
		a, b := next(info), o.history.Capture(info)
		return func(res *sandbox.Result, resp *run.Response) {
			if a != nil {
				a(res, resp)
			}
			if b != nil {
				b(res, resp)
			}
		}
	}
}

// close writes what the history still holds and flushes the spans not
// exported yet.
func (o *observers) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if o.history != nil {
		o.history.Close(ctx)
	}
	if o.tracer != nil {
		o.tracer.Shutdown(ctx)
	}
}
