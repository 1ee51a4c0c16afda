// Package metrics is the gateway's Prometheus metrics, served at /metrics
// in the Prometheus text format by the official Go client.
//
// Start with [New]: a [*Metrics] is a run.Observer (set it in
// run.Options.Observer, alone or with others through run.Observers), and
// [Metrics.Handler] serves the registry. What it exports:
//
//	codemode_runs_total{surface,outcome}                  runs ended; outcome "ok" or the first error's code
//	codemode_run_duration_seconds{surface}                histogram of run durations
//	codemode_tool_calls_total{server,tool,outcome}        tool calls ended; outcome ok, tool_error, invalid_input, failed, suspended
//	codemode_tool_call_duration_seconds{server,tool}      histogram of tool-call durations
//	codemode_sandbox_pool_ready / _capacity               prepared VMs waiting, and how many the pool keeps
//	codemode_sandbox_in_use                               runs holding a VM
//	codemode_sandbox_pool_gets_total / _misses_total      VMs taken; of them, made on the spot
//	codemode_sandbox_pool_wait_seconds_total              time runs waited for a VM to be made
//	codemode_upstream_up{server}                          1 when connected
//	codemode_upstream_state{server,state}                 1 for the server's current state
//	codemode_history_dropped_total                        runs the history could not record (queue full)
//	codemode_history_queue_length                         runs waiting to be written
//
// plus the Go runtime's and the process's standard metrics.
//
// Label values are bounded: surfaces, outcomes and states are fixed sets;
// servers come from the configuration; tool names come from the catalog
// (a call reaches an observer only once its tool was found there), and at
// most Options.MaxToolsPerServer of them per server get series of their
// own: the calls of further tools are counted under tool="_other".
package metrics

import (
	"context"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// OtherTool is the tool label of the calls of a server's tools beyond
// Options.MaxToolsPerServer.
const OtherTool = "_other"

// Options configure Metrics. All fields are optional.
type Options struct {
	// MaxToolsPerServer caps the tool label values of one server; the
	// first ones called get their own series. Default 100.
	MaxToolsPerServer int
	// Upstreams reports the upstream servers' states (upstream.Manager's
	// Statuses); nil exports none.
	Upstreams func() []upstream.Status
	// HistoryDropped and HistoryQueued report the run history's drops and
	// queue length; nil exports none.
	HistoryDropped func() uint64
	HistoryQueued  func() int
	// NoProcess leaves out the Go runtime's and the process's metrics
	// (tests that compare whole scrapes).
	NoProcess bool
}

// Metrics holds the gateway's metrics. It is safe for concurrent use.
type Metrics struct {
	opts    Options
	reg     *prometheus.Registry
	runs    *prometheus.CounterVec
	runDur  *prometheus.HistogramVec
	calls   *prometheus.CounterVec
	callDur *prometheus.HistogramVec

	mu    sync.Mutex
	tools map[string]map[string]bool // server → tools with series of their own
}

// New returns Metrics registered in a registry of their own.
func New(opts *Options) *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), tools: map[string]map[string]bool{}}
	if opts != nil {
		m.opts = *opts
	}
	if m.opts.MaxToolsPerServer <= 0 {
		m.opts.MaxToolsPerServer = 100
	}
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "codemode_runs_total",
		Help: "Runs ended, by surface and outcome (ok, or the code of the first error diagnostic)."}, []string{"surface", "outcome"})
	m.runDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "codemode_run_duration_seconds",
		Help:    "How long runs took, from the request to the response.",
		Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300}}, []string{"surface"})
	m.calls = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "codemode_tool_calls_total",
		Help: "Tool calls ended, by server, tool and outcome (ok, tool_error, invalid_input, failed, suspended)."}, []string{"server", "tool", "outcome"})
	m.callDur = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "codemode_tool_call_duration_seconds",
		Help:    "How long tool calls took, from the request to the upstream to its answer.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 120}}, []string{"server", "tool"})
	m.reg.MustRegister(m.runs, m.runDur, m.calls, m.callDur, poolCollector{})
	if m.opts.Upstreams != nil {
		m.reg.MustRegister(upstreamCollector{m.opts.Upstreams})
	}
	if f := m.opts.HistoryDropped; f != nil {
		m.reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "codemode_history_dropped_total",
			Help: "Runs the history did not record because its queue was full (recording never makes a run wait)."},
			func() float64 { return float64(f()) }))
	}
	if f := m.opts.HistoryQueued; f != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "codemode_history_queue_length",
			Help: "Runs waiting to be written to the history."}, func() float64 { return float64(f()) }))
	}
	if !m.opts.NoProcess {
		m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return m
}

// Handler serves the metrics in the Prometheus text format (or OpenMetrics,
// when the scraper asks for it).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{EnableOpenMetrics: true})
}

// Registry is where the metrics are registered, for collectors of other
// packages.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// toolLabel is tool's label value among server's, OtherTool past the cap.
func (m *Metrics) toolLabel(server, tool string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := m.tools[server]
	if seen == nil {
		seen = map[string]bool{}
		m.tools[server] = seen
	}
	if seen[tool] {
		return tool
	}
	if len(seen) >= m.opts.MaxToolsPerServer {
		return OtherTool
	}
	seen[tool] = true
	return tool
}

// surfaceLabel names a run's surface; runs made by a Runner used directly
// have none.
func surfaceLabel(o run.Origin) string {
	if o.Surface == "" {
		return "direct"
	}
	return o.Surface
}

// StartRun implements run.Observer.
func (m *Metrics) StartRun(ctx context.Context, s *run.RunStart) (context.Context, run.RunObserver) {
	return ctx, &runObs{m: m, surface: surfaceLabel(s.Origin)}
}

type runObs struct {
	m       *Metrics
	surface string
}

func (r *runObs) StartCall(ctx context.Context, c *run.CallStart) (context.Context, func(*run.CallEnd)) {
	return ctx, func(e *run.CallEnd) {
		tool := r.m.toolLabel(c.ServerID, c.Tool)
		r.m.calls.WithLabelValues(c.ServerID, tool, e.Outcome).Inc()
		if e.Outcome != run.CallInvalid && e.Outcome != run.CallSuspended {
			// Only calls that went out have a duration worth a sample.
			r.m.callDur.WithLabelValues(c.ServerID, tool).Observe(e.Duration.Seconds())
		}
	}
}

func (r *runObs) EndRun(ctx context.Context, e *run.RunEnd) {
	r.m.runs.WithLabelValues(r.surface, e.Outcome).Inc()
	r.m.runDur.WithLabelValues(r.surface).Observe(e.Duration.Seconds())
}

// poolCollector exports sandbox.Pool() at scrape time.
type poolCollector struct{}

var (
	poolReady    = prometheus.NewDesc("codemode_sandbox_pool_ready", "Prepared sandbox VMs waiting for a run.", nil, nil)
	poolCapacity = prometheus.NewDesc("codemode_sandbox_pool_capacity", "How many prepared VMs the pool keeps.", nil, nil)
	poolInUse    = prometheus.NewDesc("codemode_sandbox_in_use", "Runs holding a sandbox VM now.", nil, nil)
	poolGets     = prometheus.NewDesc("codemode_sandbox_pool_gets_total", "Sandbox VMs taken by runs.", nil, nil)
	poolMisses   = prometheus.NewDesc("codemode_sandbox_pool_misses_total", "Sandbox VMs made on the spot because none was ready.", nil, nil)
	poolWait     = prometheus.NewDesc("codemode_sandbox_pool_wait_seconds_total", "Time runs waited for a sandbox VM to be made.", nil, nil)
)

func (poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolReady, poolCapacity, poolInUse, poolGets, poolMisses, poolWait} {
		ch <- d
	}
}

func (poolCollector) Collect(ch chan<- prometheus.Metric) {
	p := sandbox.Pool()
	ch <- prometheus.MustNewConstMetric(poolReady, prometheus.GaugeValue, float64(p.Ready))
	ch <- prometheus.MustNewConstMetric(poolCapacity, prometheus.GaugeValue, float64(p.Capacity))
	ch <- prometheus.MustNewConstMetric(poolInUse, prometheus.GaugeValue, float64(p.InUse))
	ch <- prometheus.MustNewConstMetric(poolGets, prometheus.CounterValue, float64(p.Gets))
	ch <- prometheus.MustNewConstMetric(poolMisses, prometheus.CounterValue, float64(p.Misses))
	ch <- prometheus.MustNewConstMetric(poolWait, prometheus.CounterValue, p.Wait.Seconds())
}

// upstreamCollector exports the upstream servers' states at scrape time.
type upstreamCollector struct{ statuses func() []upstream.Status }

var (
	upstreamUp    = prometheus.NewDesc("codemode_upstream_up", "1 when the upstream server is connected, else 0.", []string{"server"}, nil)
	upstreamState = prometheus.NewDesc("codemode_upstream_state", "1 for the upstream server's current state (not-connected, connecting, connected, backoff, error).", []string{"server", "state"}, nil)
)

// states are the values of the state label, each exported for every
// server (0 or 1) so that a server's series never appear and vanish.
var states = []upstream.State{upstream.StateNotConnected, upstream.StateConnecting, upstream.StateConnected, upstream.StateBackoff, upstream.StateError}

func (upstreamCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- upstreamUp
	ch <- upstreamState
}

func (c upstreamCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.statuses() {
		up := 0.0
		if st.State == upstream.StateConnected {
			up = 1
		}
		ch <- prometheus.MustNewConstMetric(upstreamUp, prometheus.GaugeValue, up, st.ServerID)
		for _, s := range states {
			v := 0.0
			if st.State == s {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(upstreamState, prometheus.GaugeValue, v, st.ServerID, string(s))
		}
	}
}
