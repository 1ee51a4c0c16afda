package sandbox

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// completion is a finished host operation, waiting to be settled on the
// event-loop goroutine.
type completion struct {
	id   int
	ok   bool
	data string // JSON: the value, or the error description
	size int    // bytes of the operation's payload, returned to the budget
	// suspend: the handler returned Suspend; the operation stays in flight
	// and will not complete in this run.
	suspend bool
	// abort: the handler returned an *Abort; the run ends with it.
	abort *diag.Diagnostic
}

// run is the state of one execution. Every field is owned by the goroutine
// that called execute (the event loop), except those marked otherwise.
type run struct {
	ctx  context.Context
	opts *Options
	code string
	vm   vm

	start    time.Time
	deadline time.Time

	// Host operations. opCtx is cancelled when the run ends, which cancels
	// in-flight upstream calls (and so sends notifications/cancelled).
	opCtx       context.Context
	opCancel    context.CancelFunc
	completions chan completion // written by workers
	workers     sync.WaitGroup
	inflight    int        // started by the script, not settled
	queued      []hostCall // started by the script, not dispatched
	// suspended counts the operations in flight whose handler returned
	// Suspend: they never complete, and once nothing else can happen the
	// run ends, suspended (Result.Suspended).
	suspended int
	// payloads are the bytes of the operations in flight: their inputs
	// from the call, their results from when the handler returns until
	// they are settled. They live outside the VM's memory limit, so
	// together they may not exceed it (nor the shared Options.Budget).
	payloads payloads

	timers  timerHeap
	timerAt map[int]*timer
	// det is set for a deterministic run (Options.Deterministic): timers
	// fire in virtual time, vnow after the start, and host
	// operations are settled a round at a time (see determinism.go).
	det     bool
	vnow    time.Duration
	delayed int // pending timers with a positive delay (see cancelTimers)
	// winding: the module has finished with only timers left, and delayed
	// timers are cancelled, also those scheduled from now on; cancelled
	// counts them for the one diagnostic that finish reports.
	winding   bool
	cancelled int

	// The logs (res.Logs and these) are also read by detach, from another
	// goroutine: logMu guards them.
	logMu         sync.Mutex
	logBytes      int64
	logsTruncated bool
	logsCapped    bool // truncated by the number of entries, not by bytes

	// inHost is set while the event loop runs a host operation's handler
	// itself (see dispatch): a run detached then was waiting for the host,
	// not inside a built-in.
	inHost atomic.Bool

	// live is the VM while the run holds it, for interrupts from the
	// supervising goroutine (vmMu guards it).
	vmMu sync.Mutex
	live vm

	// Settlement of the agent module.
	settled   bool
	settledOK bool

	importErrs []error
	diags      []diag.Diagnostic
	failed     bool // a fatal diagnostic was recorded
	res        *Result

	localeNoted bool // a LOCALE_IGNORED warning was given (locale.go)
}

func newRun(ctx context.Context, code string, opts *Options) *run {
	r := &run{
		ctx:         ctx,
		opts:        opts,
		code:        code,
		start:       time.Now(),
		completions: make(chan completion, 64),
		timerAt:     map[int]*timer{},
		res:         &Result{Result: json.RawMessage("null")},
	}
	r.det = opts.Deterministic != nil
	r.deadline = r.start.Add(opts.Limits.Timeout)
	if !opts.Deadline.IsZero() {
		r.deadline = opts.Deadline
	}
	r.opCtx, r.opCancel = context.WithDeadline(ctx, r.deadline)
	r.payloads.limit = opts.Limits.MaxMemoryBytes
	r.payloads.budget = opts.Budget
	return r
}

// stopGrace is how long an interrupted run may take to stop before it is
// answered without waiting for it. The engine checks for an interrupt only
// when it calls a function or jumps backwards; a built-in that loops over
// data the script holds (sorting millions of elements, say) does neither
// until it returns. Such a run is detached: its answer (SANDBOX_LIMIT or
// CANCELLED, with the logs so far) goes out now, and its VM is closed when
// the built-in returns, which its memory limit bounds (docs/ARCHITECTURE.md).
const stopGrace = 500 * time.Millisecond

// detached counts the detached runs whose JavaScript has not stopped yet.
var detached atomic.Int64

// Detached returns the number of runs that were answered at their deadline
// or cancellation while their JavaScript was still inside a built-in, and
// that have not stopped since: each holds a goroutine, its CPU and up to
// its memory limit until that built-in returns.
func Detached() int { return int(detached.Load()) }

// supervise runs the script on an engine goroutine and returns its result:
// when it ends, or once the deadline or ctx has passed and the engine has
// not stopped within stopGrace of being interrupted.
func (r *run) supervise() *Result {
	done := make(chan struct{})
	goWork(func() {
		defer close(done)
		r.execute()
	})
	t := time.NewTimer(time.Until(r.deadline))
	defer t.Stop()
	select {
	case <-done:
		r.res.Stopped = done
		return r.res
	case <-r.ctx.Done():
	case <-t.C:
	}
	// The engine checks its own deadline only every 10,000 ticks, and
	// clears a pending interrupt when Go next enters it: interrupt until
	// the run has stopped.
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	for {
		r.interruptVM()
		select {
		case <-done:
			r.res.Stopped = done
			return r.res
		case <-tick.C:
		case <-grace.C:
			return r.detach(done)
		}
	}
}

// interruptVM interrupts the run's VM, if it holds one that is still open.
func (r *run) interruptVM() {
	r.vmMu.Lock()
	defer r.vmMu.Unlock()
	if r.live != nil {
		r.live.interrupt()
	}
}

// detach answers a run whose engine goroutine has not stopped: a timeout or
// a cancellation, with the logs so far. Nothing the engine goroutine owns
// is read but the logs, under their lock. Host operations in flight are
// cancelled, and the VM is interrupted until it stops.
func (r *run) detach(done <-chan struct{}) *Result {
	r.opCancel()
	res := &Result{Result: json.RawMessage("null"), Detached: true, Stopped: done}
	r.logMu.Lock()
	res.Logs = append([]LogEntry{}, r.res.Logs...)
	if w, ok := r.truncationWarning(time.Since(r.start).Milliseconds()); ok {
		if n := len(res.Logs); r.det && n > 0 {
			w.TimeMs = res.Logs[n-1].TimeMs // virtual time is the engine goroutine's
		}
		res.Logs = append(res.Logs, w)
	}
	r.logMu.Unlock()
	d := r.timeoutDiagnostic()
	if r.ctx.Err() != nil && time.Now().Before(r.deadline) {
		d = canceledDiagnostic
		res.Canceled = true
	} else {
		res.TimedOut = true
	}
	if r.inHost.Load() {
		d.Message += " (it was waiting for a host operation that did not return in time; the run is stopped when it returns)"
	} else {
		d.Message += " (it was inside a built-in that cannot be interrupted; the run is stopped when that call returns)"
	}
	res.Diagnostics = []diag.Diagnostic{d}
	res.Duration = time.Since(r.start)
	detached.Add(1)
	go func() {
		defer detached.Add(-1)
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			r.interruptVM()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return res
}

func (r *run) execute() {
	defer r.finish()
	if err := r.ctx.Err(); err != nil {
		r.canceled()
		return
	}
	v, err := pool.get()
	if err != nil {
		r.fatal(diag.Diagnostic{Severity: diag.SeverityError, Code: diag.SandboxLimit, Message: "could not create a sandbox: " + err.Error(),
			Hint: "retry; if it keeps failing the host is out of memory"})
		return
	}
	r.vm = v
	v.bind(r)
	v.setLimits(r.deadline, r.opts.Limits.MaxMemoryBytes)
	r.vmMu.Lock()
	r.live = v
	r.vmMu.Unlock()

	if d := r.opts.Deterministic; d != nil {
		if err := v.determinize(d.Seed, d.Now.UnixMilli()); err != nil {
			r.engineFailure(err, "")
			return
		}
	}
	if err := v.evalModule(r.code, r.opts.Prelude); err != nil {
		r.evalFailure(err)
		return
	}
	r.loop()
	if !r.failed && !r.res.Suspended {
		r.collectResult()
	}
}

// loop runs the event loop until the module has settled and no work is left,
// or a fatal failure, a limit or cancellation ends it.
func (r *run) loop() {
	wait := time.NewTimer(time.Hour)
	defer wait.Stop()
	for !r.failed {
		if err := r.vm.runJobs(); err != nil {
			r.engineFailure(err, "")
			return
		}
		if r.failed {
			return
		}
		if r.vmLimit() {
			// The script caught the engine's error (out of memory, a
			// guarded built-in) before the interrupt stopped it.
			return
		}
		if r.settled && !r.settledOK {
			// Before dispatching: calls the failed script left behind
			// must not delay the report.
			info, err := r.vm.rejection()
			if err != nil {
				r.engineFailure(err, "")
				return
			}
			r.uncaught(info, "")
			return
		}
		if len(r.queued) > 0 && r.dispatch() {
			continue // settled at once (or failed): run what it unblocked
		}
		if r.settled && r.inflight == 0 && r.delayed > 0 {
			r.cancelTimers()
		}
		if r.suspended > 0 && r.inflight == r.suspended && (r.det || len(r.timers) == 0) {
			// Only suspended operations could let the script go on (in a
			// deterministic run timers wait for them: see awaitRound).
			// Rejections unhandled so far are not reported: the run that
			// resumes with the results may still handle them.
			r.res.Suspended = true
			return
		}
		if r.det && r.inflight > 0 {
			if !r.awaitRound() {
				return
			}
			continue
		}
		if r.inflight == 0 && len(r.timers) == 0 {
			// Idle: a rejection still unhandled now can no longer be
			// handled by anything but code that is already done.
			infos, err := r.vm.unhandled()
			if err != nil {
				r.engineFailure(err, "")
				return
			}
			if len(infos) > 0 {
				r.uncaught(infos[0], prefixUnhandled)
				return
			}
			if !r.settled {
				r.fatal(diag.Diagnostic{Severity: diag.SeverityError, Code: diag.Unsettled,
					Message: "the script is waiting on a promise that nothing can settle: no tool call or timer is pending",
					Hint:    "make sure every awaited promise is eventually resolved or rejected (a `new Promise` whose resolve is never called never finishes)"})
			}
			return
		}
		if r.det {
			// Only timers are left: virtual time jumps to the next one.
			if !r.advance() {
				return
			}
			continue
		}
		// Wait for the next completion, timer or the end of the run.
		next := r.deadline
		if len(r.timers) > 0 && r.timers[0].at.Before(next) {
			next = r.timers[0].at
		}
		wait.Reset(time.Until(next))
		select {
		case c := <-r.completions:
			if !r.complete(c) {
				return
			}
			// Settle everything else that is ready before running jobs.
			for drained := false; !drained && !r.failed; {
				select {
				case c := <-r.completions:
					if !r.complete(c) {
						return
					}
				default:
					drained = true
				}
			}
		case <-wait.C:
			if !time.Now().Before(r.deadline) {
				r.timeout()
				return
			}
			r.fireDue()
		case <-r.ctx.Done():
			r.interrupted()
			return
		}
	}
}

// complete settles a finished host operation's promise; false means the
// run has failed.
func (r *run) complete(c completion) bool {
	if c.suspend {
		r.suspended++ // stays in flight
		return true
	}
	r.inflight--
	// The result is in the VM now (or dropped): its copy outside no longer
	// counts.
	defer r.payloads.release(int64(c.size))
	if c.abort != nil {
		r.fatal(*c.abort)
		return false
	}
	if err := r.vm.settle(c.id, c.ok, c.data); err != nil {
		r.engineFailure(err, "")
		return false
	}
	return true
}

// cancelTimers cancels the timers with a positive delay once the module
// has finished and its tool calls have all settled, and from then on drops
// any such timer as it is scheduled. Waiting for them would delay the
// result for nothing in the common case, a timeout guard in a
// Promise.race: `setTimeout(reject, 10_000)` would hold a finished run for
// ten seconds, or past its timeout and lose the result. Code that must run
// later awaits its delay. Zero-delay timers are deferred work, not waits:
// they still run (and may fail the run). The rule depends on the delays
// asked for, not on the clock, so a deterministic run stays deterministic.
// finish reports the count in one info diagnostic.
func (r *run) cancelTimers() {
	r.winding = true
	for id, t := range r.timerAt {
		if !t.deferred {
			heap.Remove(&r.timers, t.index)
			delete(r.timerAt, id)
			r.cancelled++
		}
	}
	r.delayed = 0
}

// cancelledDiagnostic says how many timers cancelTimers cancelled.
func (r *run) cancelledDiagnostic() diag.Diagnostic {
	msg := "the script finished while 1 timer (setTimeout with a delay) was still waiting; it was cancelled without running"
	if r.cancelled > 1 {
		msg = fmt.Sprintf("the script finished while %d timers (setTimeout with a delay) were still waiting; they were cancelled without running", r.cancelled)
	}
	return diag.Diagnostic{Severity: diag.SeverityInfo, Code: diag.TimersCancelled, Message: msg,
		Hint: "to run code after a delay, await it before the script ends: await new Promise((r) => setTimeout(r, ms))"}
}

func (r *run) fireDue() {
	now := r.now()
	// In a deterministic run, host operations a callback starts take no
	// time: they run (a round) before the next timer, even one due now.
	for len(r.timers) > 0 && !r.timers[0].at.After(now) && !r.failed && !(r.det && len(r.queued) > 0) {
		t := heap.Pop(&r.timers).(*timer)
		delete(r.timerAt, t.id)
		if !t.deferred {
			r.delayed--
		}
		thrown, err := r.vm.fire(t.id)
		if err != nil {
			r.engineFailure(err, prefixTimer)
			return
		}
		if thrown != nil {
			r.uncaught(*thrown, prefixTimer)
			return
		}
		if err := r.vm.runJobs(); err != nil {
			r.engineFailure(err, "")
			return
		}
	}
}

// finish ends the run: it cancels host operations still in flight, waits
// briefly for their handlers (so that their trace entries are complete),
// returns the VM and fills in the result.
func (r *run) finish() {
	r.opCancel()
	done := make(chan struct{})
	go func() { r.workers.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		// A worker's handler ignoring cancellation must not hold the run
		// hostage. (One run inline, on this goroutine, can: that is why
		// Handler requires honouring ctx.)
	}
	if r.vm != nil {
		// No interrupt may reach the VM once it is handed back.
		r.vmMu.Lock()
		r.live = nil
		r.vmMu.Unlock()
		pool.discard(r.vm)
	}
	// Completions never settled (the run ended first) hold nothing now.
	r.payloads.releaseAll()
	r.logMu.Lock()
	if w, ok := r.truncationWarning(r.elapsedMs()); ok {
		r.res.Logs = append(r.res.Logs, w)
	}
	r.logMu.Unlock()
	if r.failed {
		r.res.Result = json.RawMessage("null")
	}
	if r.cancelled > 0 {
		r.diags = append(r.diags, r.cancelledDiagnostic())
	}
	r.res.Diagnostics = r.diags
	r.res.Duration = time.Since(r.start)
}

// elapsedMs is the time since the start of the run that logs report:
// virtual in a deterministic run.
func (r *run) elapsedMs() int64 {
	if r.det {
		return r.vnow.Milliseconds()
	}
	return time.Since(r.start).Milliseconds()
}

// truncationWarning is the log entry, at timeMs, that says the logs were
// cut, if they were. The caller holds logMu or is the engine goroutine.
func (r *run) truncationWarning(timeMs int64) (LogEntry, bool) {
	if !r.logsTruncated {
		return LogEntry{}, false
	}
	msg := fmt.Sprintf("log output truncated: the script logged more than maxLogBytes (%d bytes); later console output was dropped", r.opts.Limits.MaxLogBytes)
	if r.logsCapped {
		msg = fmt.Sprintf("log output truncated: the script logged more than %d entries (maxLogBytes %d allows one per 16 bytes); later console output was dropped", logEntriesFor(r.opts.Limits.MaxLogBytes), r.opts.Limits.MaxLogBytes)
	}
	return LogEntry{Level: LevelWarn, TimeMs: timeMs, Message: msg}, true
}

// now is the time timers are due against: virtual in a deterministic run.
func (r *run) now() time.Time {
	if r.det {
		return virtualEpoch.Add(r.vnow)
	}
	return time.Now()
}

// --- host, as seen from JavaScript ------------------------------------------

// maxPendingOps bounds the host operations of one run in flight at once:
// each holds a goroutine and memory outside the VM's memory limit.
const maxPendingOps = 1000

func (r *run) call(id int, op, payload string) error {
	if r.inflight >= maxPendingOps {
		return diag.Errorf(diag.SandboxLimitError, "too many host operations in flight (the sandbox allows %d at once)", maxPendingOps).
			WithHint("await host calls (tool calls) before starting more").
			WithFields(map[string]any{"limit": "pendingOperations", "value": maxPendingOps})
	}
	if err := r.payloads.reserve(int64(len(payload))); err != nil {
		if err == errOverRun {
			return diag.Errorf(diag.SandboxLimitError, "the arguments and results of the host operations in flight exceed maxMemoryBytes (%d bytes)", r.opts.Limits.MaxMemoryBytes).
				WithHint("await host calls (tool calls) before starting more").
				WithFields(map[string]any{"limit": "maxMemoryBytes", "value": r.opts.Limits.MaxMemoryBytes})
		}
		return budgetError(err, "the arguments")
	}
	r.inflight++
	r.queued = append(r.queued, hostCall{id: id, op: op, payload: payload})
	return nil
}

// hostCall is a host operation the script started and the loop has not
// handed to a handler yet.
type hostCall struct {
	id          int
	op, payload string
}

// dispatch starts the host operations the script queued since the last
// dispatch. It runs once JavaScript is idle, so the calls a script makes in
// one turn (a Promise.all) start together.
//
// When the script is waiting for exactly one operation and nothing else can
// happen meanwhile (no timer pending, no other operation in flight), the
// loop would only wait for that operation's completion: it runs the handler
// itself instead of handing it to a worker, which saves two goroutine
// switches per call of a script that awaits its calls one by one. The
// handler honours ctx, which carries the run's deadline, so the run still
// ends on time. It reports whether it settled the operation (or failed the
// run doing so) rather than handing operations to workers.
func (r *run) dispatch() (inline bool) {
	q := r.queued
	r.queued = r.queued[:0]
	// The payloads must not stay reachable from the queue's array.
	defer clear(q)
	// In a deterministic run timers wait for host operations anyway (see
	// awaitRound), so a lone operation runs inline whatever is pending.
	if len(q) == 1 && r.inflight == 1 && (r.det || len(r.timers) == 0) {
		r.inHost.Store(true)
		done := r.perform(r.opCtx, q[0])
		r.inHost.Store(false)
		r.complete(done)
		return true
	}
	if r.det {
		r.dispatchInOrder(q)
		return false
	}
	for _, c := range q {
		r.workers.Add(1)
		goWork(func() {
			defer r.workers.Done()
			done := r.perform(r.opCtx, c)
			select {
			case r.completions <- done:
			case <-r.opCtx.Done():
				// The run is over; nobody will settle this promise.
				r.payloads.release(int64(done.size))
			}
		})
	}
	return false
}

// perform runs one host operation's handler.
func (r *run) perform(ctx context.Context, c hostCall) completion {
	done := completion{id: c.id, size: len(c.payload)}
	data, err := r.handle(ctx, c.op, json.RawMessage(c.payload))
	if err == nil {
		// The result counts from now until it is settled into the VM; one
		// that does not fit is dropped here, before it is copied again.
		if rerr := r.payloads.reserve(int64(len(data))); rerr != nil {
			err = r.resultRefused(rerr, len(data))
		} else {
			done.size += len(data)
		}
	}
	var abort *Abort
	switch {
	case errors.Is(err, Suspend):
		done.suspend = true
	case errors.As(err, &abort):
		d := abort.Diagnostic
		done.abort = &d
	case err != nil:
		done.data = errorPayload(err)
	default:
		done.ok, done.data = true, string(data)
	}
	return done
}

// resultRefused is the error of a host operation whose result of n bytes
// does not fit in what is left of maxMemoryBytes or of the shared budget.
func (r *run) resultRefused(err error, n int) error {
	if err == errOverRun {
		fields := map[string]any{"limit": "maxMemoryBytes", "value": r.opts.Limits.MaxMemoryBytes}
		if int64(n) > r.opts.Limits.MaxMemoryBytes {
			return diag.Errorf(diag.SandboxLimitError, "a result of %d bytes was dropped: it is larger than maxMemoryBytes (%d bytes)", n, r.opts.Limits.MaxMemoryBytes).
				WithHint("ask for less at once (a page, a filter, a smaller range)").WithFields(fields)
		}
		return diag.Errorf(diag.SandboxLimitError, "a result of %d bytes was dropped: with the data of the other host operations in flight it exceeds maxMemoryBytes (%d bytes)", n, r.opts.Limits.MaxMemoryBytes).
			WithHint("await results before starting more calls, or ask for less per call (a page, a filter)").WithFields(fields)
	}
	return budgetError(err, fmt.Sprintf("a result of %d bytes", n))
}

// budgetError is the error of a payload the shared Budget refused; what
// names the payload.
func budgetError(err error, what string) error {
	de := &diag.Error{Class: diag.SandboxLimitError, Message: what + " did not fit: " + err.Error(),
		Hint: "ask for less at once (a page, a filter, a smaller range), or retry when the gateway is less busy", Fields: map[string]any{"limit": "memoryBudget"}}
	var lim interface {
		error
		LimitValue() (string, int64, string)
	}
	if errors.As(err, &lim) {
		limit, value, hint := lim.LimitValue()
		de.Fields = map[string]any{"limit": limit, "value": value}
		if hint != "" {
			de.Hint = hint
		}
	}
	return de
}

// errOverRun refuses a payload that would take the run's payloads in
// flight beyond its maxMemoryBytes.
var errOverRun = errors.New("over the run's memory limit")

// payloads counts the bytes of a run's host operations in flight, against
// the run's limit and the shared budget. Safe for concurrent use: results
// are counted on worker goroutines.
type payloads struct {
	mu     sync.Mutex
	bytes  int64
	limit  int64
	budget Budget // may be nil
}

func (p *payloads) reserve(n int64) error {
	if n <= 0 {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bytes+n > p.limit {
		return errOverRun
	}
	if p.budget != nil {
		if err := p.budget.Reserve(n); err != nil {
			return err
		}
	}
	p.bytes += n
	return nil
}

func (p *payloads) release(n int64) {
	if n <= 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	n = min(n, p.bytes)
	p.bytes -= n
	if p.budget != nil {
		p.budget.Unreserve(n)
	}
}

// releaseAll gives back what is still counted when the run ends.
func (p *payloads) releaseAll() {
	p.mu.Lock()
	n := p.bytes
	p.mu.Unlock()
	p.release(n)
}

func (r *run) handle(ctx context.Context, op string, payload json.RawMessage) (data json.RawMessage, err error) {
	if r.opts.Handle == nil {
		return nil, diag.Errorf(diag.CodemodeError, "unknown host operation %q", op).WithHint("this sandbox has no host operations")
	}
	defer func() {
		// A handler bug must not take the process down with it.
		if p := recover(); p != nil {
			err = diag.Errorf(diag.CodemodeError, "internal error in host operation %q: %v", op, p).WithHint("this is a bug in codemode; please report it")
		}
	}()
	data, err = r.opts.Handle(ctx, op, payload) // payload may be empty: no argument
	if err == nil && !json.Valid(data) {
		err = diag.Errorf(diag.CodemodeError, "host operation %q returned invalid JSON", op).WithHint("this is a bug in codemode; please report it")
	}
	return data, err
}

// AsError is the error a host operation's failure throws into the script:
// a *diag.Error as it is, any other error as a CodemodeError.
func AsError(err error) *diag.Error {
	var de *diag.Error
	if !errors.As(err, &de) {
		de = &diag.Error{Class: diag.CodemodeError, Message: err.Error()}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			de.Hint = "the run ended before this operation finished"
		}
	}
	return de
}

// errorPayload is the JSON the bootstrap's hostError() turns into an
// instance of the right @codemode/errors class.
func errorPayload(err error) string {
	de := AsError(err)
	b, mErr := json.Marshal(map[string]any{"class": de.Class, "message": de.Message, "hint": de.Hint, "fields": de.Fields})
	if mErr != nil {
		b, _ = json.Marshal(map[string]any{"class": de.Class, "message": de.Message, "hint": de.Hint})
	}
	return string(b)
}

// maxLogEntries bounds the number of log entries whatever the byte limit.
const maxLogEntries = 100_000

// logEntriesFor bounds the entries of a run: maxLogBytes counts message
// bytes, so without it a flood of empty console.log() calls would cost
// nothing and each entry's JSON frame (~40 bytes) would make the response
// dozens of times larger than maxLogBytes.
func logEntriesFor(maxLogBytes int64) int {
	return int(min(max(maxLogBytes/16, 100), maxLogEntries))
}

func (r *run) log(level Level, msg string) bool {
	r.logMu.Lock()
	defer r.logMu.Unlock()
	if r.logsTruncated {
		return false
	}
	// Measured redacted, and cut by the redactor (which cuts no marker in
	// two).
	msg = r.opts.Redact.String(msg)
	if len(r.res.Logs) >= logEntriesFor(r.opts.Limits.MaxLogBytes) {
		r.logsTruncated, r.logsCapped = true, true
		return false
	}
	cost := int64(len(msg))
	left := r.opts.Limits.MaxLogBytes - r.logBytes
	if cost > left && r.opts.KeepOversize && r.res.CutLog == nil {
		r.res.CutLog = &LogEntry{Level: level, Message: msg, TimeMs: r.elapsedMs()}
	}
	if cost > left {
		if left > 0 {
			r.res.Logs = append(r.res.Logs, LogEntry{Level: level, Message: r.opts.Redact.Cut(msg, int(left)), TimeMs: r.elapsedMs()})
			r.logged()
		}
		r.logBytes = r.opts.Limits.MaxLogBytes
		r.logsTruncated = true
		return false
	}
	r.logBytes += cost
	r.res.Logs = append(r.res.Logs, LogEntry{Level: level, Message: msg, TimeMs: r.elapsedMs()})
	r.logged()
	return true
}

// logged hands the entry just captured to Options.OnLog.
func (r *run) logged() {
	if r.opts.OnLog != nil {
		r.opts.OnLog(r.res.Logs[len(r.res.Logs)-1])
	}
}

func (r *run) timer(id int, ms float64) (bool, error) {
	if r.winding && ms > 0 {
		r.cancelled++
		return false, nil
	}
	if len(r.timers) >= r.opts.MaxPendingTimers {
		return false, fmt.Errorf("setTimeout: too many pending timers (the sandbox allows %d); await them instead of scheduling more", r.opts.MaxPendingTimers)
	}
	if ms > float64(24*time.Hour/time.Millisecond) {
		ms = float64(24 * time.Hour / time.Millisecond)
	}
	t := &timer{id: id, at: r.now().Add(time.Duration(ms * float64(time.Millisecond))), seq: id, deferred: !(ms > 0)}
	heap.Push(&r.timers, t)
	r.timerAt[id] = t
	if !t.deferred {
		r.delayed++
	}
	return true, nil
}

func (r *run) clearTimer(id int) {
	if t, ok := r.timerAt[id]; ok {
		heap.Remove(&r.timers, t.index)
		delete(r.timerAt, id)
		if !t.deferred {
			r.delayed--
		}
	}
}

func (r *run) done(ok bool) {
	r.settled, r.settledOK = true, ok
}

func (r *run) resolve(specifier string) (string, error) {
	if r.opts.Resolve == nil {
		err := &importError{specifier: specifier, reason: "does not exist"}
		r.importErrs = append(r.importErrs, err)
		return "", err
	}
	ctx, cancel := context.WithDeadline(r.ctx, r.deadline)
	defer cancel()
	src, err := r.opts.Resolve(ctx, specifier)
	if err != nil {
		r.importErrs = append(r.importErrs, err)
	}
	return src, err
}

// --- timers -----------------------------------------------------------------

type timer struct {
	id       int
	at       time.Time
	seq      int  // ties fire in the order they were scheduled
	deferred bool // asked for no delay (0, negative, NaN)
	index    int
}

type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].at.Equal(h[j].at) {
		return h[i].seq < h[j].seq
	}
	return h[i].at.Before(h[j].at)
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.index = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}
