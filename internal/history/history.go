// Package history records every run the gateway makes in the data store
// (package store's history feature): when, which surface, MCP session and
// client, the code as sent and its hash, the limits, the response as
// returned (redacted), and each tool call with its server, tool, start
// offset, duration, outcome and error class. A tool call's input and
// output are kept only when Options.Payloads is set (the config's
// "codemode": {"history": {"payloads": true}}), redacted.
//
// Start with [New]: a [*Recorder] is a run.Observer (run.Options.Observer).
// Recording never slows an answer: a run's record goes into a bounded queue
// without waiting, and one goroutine writes the queue to the store in
// batches (the runs of up to Options.FlushEvery in one transaction); when
// the queue is full the record is dropped and counted ([Recorder.Dropped],
// exported as codemode_history_dropped_total). The same goroutine enforces
// retention (Options.MaxAge, Options.MaxBytes): after a batch whenever
// the history may hold more than MaxBytes or a run older than MaxAge (it
// knows its size and oldest run from the last clean-up and what it wrote
// since), and every Options.PruneEvery.
package history

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode-mcp/codemode/internal/redact"
	"github.com/codemode-mcp/codemode/internal/replay"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/store"
)

// Sink is where a Recorder writes: store.History, or a stand-in in tests.
type Sink interface {
	Add(ctx context.Context, runs []store.RunRecord) error
	Prune(ctx context.Context, before time.Time, maxBytes int64) (store.PruneResult, error)
}

// Defaults of Options.
const (
	DefaultMaxAge          = 30 * 24 * time.Hour
	DefaultMaxBytes        = 256 << 20
	DefaultQueueSize       = 1024
	DefaultMaxPayloadBytes = 64 << 10
)

// Options configure a Recorder. All fields are optional.
type Options struct {
	// Payloads records each tool call's input and output (redacted).
	Payloads bool
	// MaxPayloadBytes bounds one recorded input or output; a larger one is
	// recorded as {"truncated": true, "bytes": N}. Default 64 KiB.
	MaxPayloadBytes int
	// Redact removes the configured secrets from the code and the
	// payloads (the response is redacted already). Usually the Runner's.
	Redact *redact.Redactor
	// MaxAge and MaxBytes are the retention: runs older than MaxAge are
	// deleted, and the oldest runs while the history holds more than
	// MaxBytes. Defaults 30 days and 256 MiB; negative: no limit.
	MaxAge   time.Duration
	MaxBytes int64
	// PruneEvery is how often retention by age is enforced when no run
	// is being written. Default 1 minute.
	PruneEvery time.Duration
	// FlushEvery is how long a run may wait in the queue for others to be
	// written with it in one transaction (group commit: the store's cost
	// per transaction, not per run). Default 100ms.
	FlushEvery time.Duration
	// QueueSize bounds the runs waiting to be written. Default 1024.
	QueueSize int
	// Now is the clock of retention by age. Default time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Recorder records runs. It is safe for concurrent use.
type Recorder struct {
	sink Sink
	opts Options
	log  *slog.Logger
	// queued waits for the writer, at most opts.QueueSize runs. The writer
	// is kicked when the queue stops being empty and when it holds a full
	// batch, not for every run: waking it per run cost each run about a
	// tenth of its time on two cores (docs/BENCHMARKS.md).
	qmu     sync.Mutex
	queued  []*pending
	kick    chan struct{}
	dropped atomic.Uint64
	written atomic.Uint64

	stop    chan struct{}
	done    chan struct{}
	closing sync.Once

	mu   sync.Mutex
	subs map[chan struct{}]bool

	// warned is when the writer last warned of a failed write (its own).
	warned time.Time

	// bundles holds the replay bundles Capture made, by run id, until
	// the run's EndRun takes them.
	bundles sync.Map
}

// New returns a Recorder writing to sink, and starts its writer; Close
// stops it.
func New(sink Sink, opts *Options) *Recorder {
	r := &Recorder{sink: sink, stop: make(chan struct{}), done: make(chan struct{}), subs: map[chan struct{}]bool{}}
	if opts != nil {
		r.opts = *opts
	}
	o := &r.opts
	if o.MaxAge == 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.PruneEvery <= 0 {
		o.PruneEvery = time.Minute
	}
	if o.FlushEvery <= 0 {
		o.FlushEvery = 100 * time.Millisecond
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueueSize
	}
	if o.MaxPayloadBytes <= 0 {
		o.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	r.log = o.Logger
	r.kick = make(chan struct{}, 1)
	go r.write()
	return r
}

// Payloads reports whether the recorder keeps tool calls' inputs and
// outputs (and replay bundles, see Capture).
func (r *Recorder) Payloads() bool { return r.opts.Payloads }

// Dropped is how many runs were not recorded because the queue was full.
func (r *Recorder) Dropped() uint64 { return r.dropped.Load() }

// Written is how many runs were written to the store (counted once the
// retention that follows each batch is applied).
func (r *Recorder) Written() uint64 { return r.written.Load() }

// Queued is how many runs wait to be written.
func (r *Recorder) Queued() int {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	return len(r.queued)
}

// fullBatch is the queue length at which the writer writes at once
// instead of waiting for FlushEvery.
func (r *Recorder) fullBatch() int { return min(maxBatch, r.opts.QueueSize) }

// enqueue queues p for the writer, or drops it (and counts it) when the
// queue is full.
func (r *Recorder) enqueue(p *pending) {
	r.qmu.Lock()
	if len(r.queued) >= r.opts.QueueSize {
		r.qmu.Unlock()
		r.dropped.Add(1)
		return
	}
	r.queued = append(r.queued, p)
	n := len(r.queued)
	r.qmu.Unlock()
	if n == 1 || n >= r.fullBatch() {
		select {
		case r.kick <- struct{}{}:
		default: // already kicked
		}
	}
}

// take empties the queue.
func (r *Recorder) take() []*pending {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	q := r.queued
	r.queued = nil
	return q
}

// Subscribe returns a channel that receives a value after every batch of
// runs written (a signal, coalesced: the subscriber reads the store), and
// the function that ends the subscription.
func (r *Recorder) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	r.mu.Lock()
	r.subs[ch] = true
	r.mu.Unlock()
	return ch, func() {
		r.mu.Lock()
		delete(r.subs, ch)
		r.mu.Unlock()
	}
}

func (r *Recorder) notify() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for ch := range r.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Close writes the runs still queued (until ctx ends) and stops the
// writer. Runs ended after Close are dropped.
func (r *Recorder) Close(ctx context.Context) error {
	r.closing.Do(func() { close(r.stop) })
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pending is a run's record as the run left it: what the writer turns
// into a store.RunRecord, off the run's path.
type pending struct {
	start    *run.RunStart
	bundle   *replay.Bundle // with Payloads, from Capture
	end      run.RunEnd
	response run.Response // a copy: see EndRun
	calls    []*call
}

type call struct {
	server, tool string
	offset       time.Duration
	end          *run.CallEnd
	input        json.RawMessage // with Payloads only
	output       json.RawMessage // with Payloads only, redacted
}

// StartRun implements run.Observer.
func (r *Recorder) StartRun(ctx context.Context, s *run.RunStart) (context.Context, run.RunObserver) {
	return ctx, &runRec{r: r, p: &pending{start: s}}
}

type runRec struct {
	r   *Recorder
	mu  sync.Mutex
	p   *pending
	leg int
}

func (rr *runRec) StartCall(ctx context.Context, c *run.CallStart) (context.Context, func(*run.CallEnd)) {
	cl := &call{server: c.ServerID, tool: c.Tool, offset: c.Offset}
	if rr.r.opts.Payloads {
		// The sandbox may reuse the buffer once the call is over.
		cl.input = bytes.Clone(c.Input)
	}
	rr.mu.Lock()
	if c.Leg > rr.leg {
		// A new leg of a run that asks for approvals runs the script
		// again: its calls are the run's.
		rr.leg, rr.p.calls = c.Leg, nil
	}
	rr.p.calls = append(rr.p.calls, cl)
	rr.mu.Unlock()
	return ctx, func(e *run.CallEnd) {
		if rr.r.opts.Payloads && e.Result != nil {
			// Now, on the run's goroutine: the result is the run's once
			// this returns.
			if b, err := json.Marshal(e.Result); err == nil {
				cl.output = rr.r.payload(b)
			}
		}
		e2 := *e
		e2.Result = nil
		rr.mu.Lock()
		cl.end = &e2
		rr.mu.Unlock()
	}
}

// EndRun queues the run's record without waiting: when the queue is full
// the run is dropped and counted.
func (rr *runRec) EndRun(ctx context.Context, e *run.RunEnd) {
	p := rr.p
	p.end = *e
	// The response is the caller's from now on: keep a copy of what a
	// surface could still change.
	p.response = *e.Response
	p.response.Logs = slices.Clone(e.Response.Logs)
	p.response.Diagnostics = slices.Clone(e.Response.Diagnostics)
	p.response.ToolTrace = slices.Clone(e.Response.ToolTrace)
	p.end.Response = nil
	if b, ok := rr.r.bundles.LoadAndDelete(p.start.ID); ok {
		p.bundle = b.(*replay.Bundle)
		p.bundle.Response = &p.response // the copy, not the caller's
	}
	select {
	case <-rr.r.stop:
		rr.r.dropped.Add(1)
		return
	default:
	}
	rr.r.enqueue(p)
}

// Capture is a run.Options.Record hook that records, with Options.Payloads,
// each run's replay bundle as it runs (replay.Recorder's Live mode: the
// run is not made deterministic), for `codemode history export`. Without
// Payloads it records nothing.
func (r *Recorder) Capture(info *run.Recording) func(*sandbox.Result, *run.Response) {
	if !r.opts.Payloads || info.ID == "" {
		return nil
	}
	id := info.ID
	rc := &replay.Recorder{Live: true, Write: func(b *replay.Bundle) error {
		r.bundles.Store(id, b)
		return nil
	}}
	return rc.Record(info)
}

// payload is b redacted and bounded.
func (r *Recorder) payload(b []byte) json.RawMessage {
	if len(b) > r.opts.MaxPayloadBytes {
		out, _ := json.Marshal(map[string]any{"truncated": true, "bytes": len(b)})
		return out
	}
	return r.opts.Redact.JSON(b)
}

// record turns a pending run into the record the store keeps.
func (r *Recorder) record(p *pending) store.RunRecord {
	s := p.start
	code := r.opts.Redact.String(s.Request.Code)
	sum := sha256.Sum256([]byte(s.Request.Code))
	limits, _ := json.Marshal(p.end.Limits)
	resp, err := json.Marshal(&p.response)
	if err != nil {
		resp, _ = json.Marshal(map[string]string{"error": "the response could not be encoded: " + err.Error()})
	}
	var args json.RawMessage
	if s.Request.Args != nil {
		args = r.opts.Redact.JSON(s.Request.Args)
	}
	var bundle json.RawMessage
	if p.bundle != nil {
		// The recorder redacted what the run did; the code (as it was
		// transpiled) is redacted here as everywhere in the history.
		p.bundle.Code = r.opts.Redact.String(p.bundle.Code)
		bundle, _ = json.Marshal(p.bundle)
	}
	rec := store.RunRecord{
		Args: args, Bundle: bundle,
		ID: s.ID, Start: s.Start, Duration: p.end.Duration,
		Surface: s.Origin.Surface, Tool: s.Origin.Tool, Session: s.Origin.Session, Client: s.Origin.Client, Auth: s.Origin.Auth,
		Script: s.Request.Script, Code: code, CodeSHA256: hex.EncodeToString(sum[:]),
		Limits: limits, Outcome: p.end.Outcome, Response: resp,
	}
	for _, c := range p.calls {
		cr := store.CallRecord{Server: c.server, Tool: c.tool, Offset: c.offset, Outcome: run.CallFailed}
		if c.end != nil {
			cr.Duration, cr.Outcome, cr.ErrorClass, cr.Error = c.end.Duration, c.end.Outcome, string(c.end.Class), c.end.Error
		} else {
			// A call still in flight when the run ended (the script did
			// not await it): it never finished for the run.
			cr.Duration = max(0, p.end.Duration-c.offset)
			cr.Error = "the run ended before the call did"
		}
		if c.input != nil {
			cr.Input = r.payload(c.input)
		}
		cr.Output = c.output
		rec.Calls = append(rec.Calls, cr)
		if cr.Outcome != run.CallOK {
			rec.FailedCalls++
		}
	}
	rec.ToolCalls = len(rec.Calls)
	return rec
}

// maxBatch bounds the runs written in one transaction.
const maxBatch = 256

// writeTimeout bounds one batch's write: a store that hangs must not keep
// the writer from ever draining (the queue drops meanwhile).
const writeTimeout = time.Minute

// write is the writer goroutine: it takes what is queued, writes it in
// batches, and prunes.
func (r *Recorder) write() {
	defer close(r.done)
	ticker := time.NewTicker(r.opts.PruneEvery)
	defer ticker.Stop()
	var flushC <-chan time.Time
	var timer *time.Timer
	st := r.prune() // what the history holds, to know when to prune again
	flush := func() {
		if timer != nil {
			timer.Stop()
			timer, flushC = nil, nil
		}
		for q := r.take(); len(q) > 0; {
			batch := q[:min(len(q), maxBatch)]
			q = q[len(batch):]
			recs := make([]store.RunRecord, len(batch))
			for i, p := range batch {
				recs[i] = r.record(p)
			}
			n := r.flush(recs)
			for _, rec := range recs[:n] {
				st.Bytes += rec.Bytes
				if st.Oldest.IsZero() || rec.Start.Before(st.Oldest) {
					st.Oldest = rec.Start
				}
			}
			if r.overLimits(st) {
				st = r.prune()
			}
			// Counted once retention is applied after them, so that whoever
			// waits for a run to be written sees the history as it stays.
			r.written.Add(uint64(n))
			r.notify()
		}
	}
	for {
		select {
		case <-r.kick:
			// Runs wait up to FlushEvery for others to share their
			// transaction, unless a batch is full.
			if r.Queued() >= r.fullBatch() {
				flush()
			} else if timer == nil {
				timer = time.NewTimer(r.opts.FlushEvery)
				flushC = timer.C
			}
		case <-flushC:
			timer, flushC = nil, nil
			flush()
		case <-ticker.C:
			st = r.prune()
		case <-r.stop:
			// Write what is left, then stop.
			flush()
			return
		}
	}
}

// overLimits reports whether the history may hold more than it keeps.
func (r *Recorder) overLimits(st store.PruneResult) bool {
	if r.opts.MaxBytes > 0 && st.Bytes > r.opts.MaxBytes {
		return true
	}
	return r.opts.MaxAge > 0 && !st.Oldest.IsZero() && st.Oldest.Before(r.opts.Now().Add(-r.opts.MaxAge))
}

// flush writes a batch and returns how many runs it wrote (all or none);
// the store sets each record's Bytes.
func (r *Recorder) flush(batch []store.RunRecord) int {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	if err := r.sink.Add(ctx, batch); err != nil {
		// The runs are lost, not retried: the store's own retries are
		// over, and the queue keeps filling behind them.
		r.dropped.Add(uint64(len(batch)))
		// Once a minute at most: a store that is down fails every batch.
		if now := time.Now(); now.Sub(r.warned) >= time.Minute {
			r.warned = now
			r.log.Warn("the run history could not record runs; they are dropped (codemode_history_dropped_total counts them)", "runs", len(batch), "err", err)
		}
		return 0
	}
	return len(batch)
}

// prune enforces retention and returns what the history holds after it
// (as far as it knows: zero when the store cannot say).
func (r *Recorder) prune() store.PruneResult {
	var before time.Time
	if r.opts.MaxAge > 0 {
		before = r.opts.Now().Add(-r.opts.MaxAge)
	}
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	res, err := r.sink.Prune(ctx, before, max(r.opts.MaxBytes, 0))
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			r.log.Warn("the run history could not apply its retention", "err", err)
		}
		return store.PruneResult{}
	}
	if res.Deleted > 0 {
		r.log.Debug("run history pruned", "runs", res.Deleted)
	}
	return res
}
