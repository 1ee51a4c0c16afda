// Package admit decides which runs the gateway takes on, and when: a bound
// on runs in flight (gateway-wide and per MCP session), a bounded queue for
// the runs that wait for a slot, and a memory budget shared by the running
// sandboxes and the payloads their host calls have in flight.
//
// Start with [New] and [Controller.Admit]. Every run asks for a [Ticket]
// before it starts (package run does, for every surface and for `codemode
// run`) and releases it when it is done. The ticket holds the run's memory
// limit against the budget for as long as the run lives; the payloads of
// its host calls (a tool's input going out, a tool's result coming back)
// are added with [Ticket.Reserve] while they are in flight and given back
// with [Ticket.Unreserve]. The invariant, at every moment:
//
//	sum of the memory limits of running sandboxes + payloads in flight ≤ Options.MemoryBytes
//
// A run waits in FIFO order for a slot and for room in the budget, at most
// its own time limit; a run that finds the queue full, or waits too long, is
// refused with a [*Refusal] (limit "concurrency"), which package run turns
// into a SANDBOX_LIMIT diagnostic the model can act on. A payload that does
// not fit is refused at once (limit "memoryBudget"), never waited for: a run
// waiting for payload room while holding its own sandbox could deadlock
// with another doing the same.
//
// A session's runs beyond its own bound wait without holding up other
// sessions' runs; runs blocked by the gateway-wide bounds keep their place,
// so that a run asking for much memory is not overtaken forever by small
// ones.
package admit

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// Options bound what the gateway runs at once. Zero fields get the defaults
// of [Defaults].
type Options struct {
	// MaxRuns bounds the runs executing at once, gateway-wide.
	MaxRuns int
	// MaxRunsPerSession bounds the runs of one MCP session executing at
	// once (see WithSession).
	MaxRunsPerSession int
	// MaxQueued bounds the runs waiting for a slot, gateway-wide; one more
	// is refused at once.
	MaxQueued int
	// MemoryBytes is the budget shared by the memory limits of running
	// sandboxes and the payloads of their host calls in flight.
	MemoryBytes int64
	// LimitGoHeap keeps the process's Go heap within what the budget
	// leaves over the running sandboxes (a soft limit, see
	// runtime/debug.SetMemoryLimit, never below MinGoHeap): sandboxes
	// allocate outside the Go heap, payloads inside it, so that the
	// process as a whole stays near the budget. It changes a
	// process-wide setting: only the gateway's own Controller sets it.
	LimitGoHeap bool
}

// MinGoHeap is the least soft limit LimitGoHeap sets: the gateway's own
// state (catalogs, sessions, buffers) needs room however full the
// sandboxes are.
const MinGoHeap = 128 << 20

// Defaults are sized for a small machine, two cores and a few GiB to spare
// (the README says how to size them): a run is mostly waiting for tools, so
// several per core keep the cores busy, and 16 runs at the default 64 MiB
// limit hold a quarter of the budget, leaving room for runs that ask for
// more memory and for tool results in flight.
var Defaults = Options{
	MaxRuns:           16,
	MaxRunsPerSession: 8,
	MaxQueued:         64,
	MemoryBytes:       4 << 30,
}

// Limit names of a Refusal, as SandboxLimitError.limit reports them.
const (
	LimitConcurrency = "concurrency"
	LimitMemory      = "memoryBudget"
)

// Refusal says why a run or a payload was not admitted: the limit, its
// value, and what to do about it.
type Refusal struct {
	Limit   string // LimitConcurrency or LimitMemory
	Value   int64  // the bound that was reached
	Message string
	Hint    string
}

func (r *Refusal) Error() string { return r.Message }

// LimitValue returns the limit, its value and the hint, for
// SandboxLimitError (see sandbox.Budget).
func (r *Refusal) LimitValue() (limit string, value int64, hint string) {
	return r.Limit, r.Value, r.Hint
}

// Stats is a snapshot of a Controller's state.
type Stats struct {
	Running, Queued int
	// PeakRunning is the most runs that executed at once so far.
	PeakRunning int
	// Reserved is the memory held now: the limits of the running sandboxes
	// plus the payloads in flight. PeakReserved is its largest value so far.
	Reserved, PeakReserved int64
	// Refused counts the runs refused so far (queue full, or waited too
	// long).
	Refused int64
}

// Controller admits runs. It is safe for concurrent use.
type Controller struct {
	opts Options

	mu         sync.Mutex
	running    int
	peakRun    int
	perSession map[any]int
	reserved   int64
	peak       int64
	refused    int64
	sandboxes  int64     // the part of reserved held by running sandboxes
	freed      int64     // payload bytes released since the last collection
	collecting bool      // a collection started by collect is running
	queue      list.List // of *waiter, FIFO
}

// waiter is a run in the queue.
type waiter struct {
	session any
	memory  int64
	ready   chan struct{} // closed once admitted
	ticket  *Ticket       // set when admitted
	elem    *list.Element
}

// New returns a Controller. opts may be nil for the defaults.
func New(opts *Options) *Controller {
	c := &Controller{opts: Defaults, perSession: map[any]int{}}
	if opts != nil {
		if opts.MaxRuns > 0 {
			c.opts.MaxRuns = opts.MaxRuns
		}
		if opts.MaxRunsPerSession > 0 {
			c.opts.MaxRunsPerSession = opts.MaxRunsPerSession
		}
		if opts.MaxQueued > 0 {
			c.opts.MaxQueued = opts.MaxQueued
		}
		if opts.MemoryBytes > 0 {
			c.opts.MemoryBytes = opts.MemoryBytes
		}
		c.opts.LimitGoHeap = opts.LimitGoHeap
	}
	c.limitGoHeap()
	return c
}

// limitGoHeap sets the Go heap's soft limit to what the budget leaves over
// the sandboxes running now (see Options.LimitGoHeap). c.mu is held, or c
// is not shared yet.
func (c *Controller) limitGoHeap() {
	if !c.opts.LimitGoHeap {
		return
	}
	debug.SetMemoryLimit(max(MinGoHeap, c.opts.MemoryBytes-c.sandboxes))
}

// Options returns the bounds in force, defaults filled in.
func (c *Controller) Options() Options { return c.opts }

type sessionKey struct{}

// WithSession returns a context whose runs count against session's bound
// (Options.MaxRunsPerSession). session is any comparable value that tells
// sessions apart (the serving layer uses the MCP session itself). Runs
// without a session share one.
func WithSession(ctx context.Context, session any) context.Context {
	return context.WithValue(ctx, sessionKey{}, session)
}

func sessionOf(ctx context.Context) any { return ctx.Value(sessionKey{}) }

// Admit waits for a slot for a run whose sandbox may use up to memory
// bytes, in FIFO order, for at most maxWait (zero: as long as ctx lives).
// It returns the run's ticket, a *Refusal when the queue is full, when
// maxWait passes, or when memory is more than the whole budget, or ctx's
// error when ctx ends first.
func (c *Controller) Admit(ctx context.Context, memory int64, maxWait time.Duration) (*Ticket, error) {
	if memory > c.opts.MemoryBytes {
		c.countRefusal()
		return nil, &Refusal{Limit: LimitMemory, Value: c.opts.MemoryBytes,
			Message: fmt.Sprintf("the run asks for maxMemoryBytes %d, more than the gateway's whole memory budget (%d bytes)", memory, c.opts.MemoryBytes),
			Hint:    fmt.Sprintf("ask for at most %d bytes", c.opts.MemoryBytes)}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	w := &waiter{session: sessionOf(ctx), memory: memory, ready: make(chan struct{})}
	c.mu.Lock()
	w.elem = c.queue.PushBack(w)
	c.pump()
	if w.ticket != nil {
		c.mu.Unlock()
		return w.ticket, nil
	}
	if c.queue.Len() > c.opts.MaxQueued {
		c.queue.Remove(w.elem)
		running, queued := c.running, c.queue.Len()
		c.refused++
		c.mu.Unlock()
		return nil, c.busy(fmt.Sprintf("%d runs are executing and %d are waiting, the most it accepts; this run was not started", running, queued))
	}
	c.mu.Unlock()

	var timeout <-chan time.Time
	if maxWait > 0 {
		t := time.NewTimer(maxWait)
		defer t.Stop()
		timeout = t.C
	}
	var err error
	select {
	case <-w.ready:
		return w.ticket, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-timeout:
		err = c.busy(fmt.Sprintf("the run waited %s for a slot (at most %d runs execute at once, %d per session) and was not started",
			maxWait.Round(time.Millisecond), c.opts.MaxRuns, c.opts.MaxRunsPerSession))
	}
	if !c.leave(w) {
		// Admitted as the wait ended: the run will not start, so the
		// slot goes back.
		w.ticket.Release()
	}
	if _, ok := err.(*Refusal); ok {
		c.countRefusal()
	}
	return nil, err
}

// busy is the refusal of a run for want of a slot.
func (c *Controller) busy(why string) *Refusal {
	return &Refusal{Limit: LimitConcurrency, Value: int64(c.opts.MaxRuns), Message: "the gateway is busy: " + why,
		Hint: "retry in a moment, and run fewer scripts at once: one script can make many tool calls concurrently with Promise.all"}
}

func (c *Controller) countRefusal() {
	c.mu.Lock()
	c.refused++
	c.mu.Unlock()
}

// leave takes w out of the queue. It reports false if w was admitted
// meanwhile.
func (c *Controller) leave(w *waiter) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if w.ticket != nil {
		return false
	}
	c.queue.Remove(w.elem)
	// The runs behind w may fit now.
	c.pump()
	return true
}

// pump admits waiters in FIFO order. A waiter held back only by its own
// session's bound is skipped; the first one held back by a gateway-wide
// bound (slots, memory) stops the scan, so that it keeps its place. c.mu is
// held.
func (c *Controller) pump() {
	for e := c.queue.Front(); e != nil; {
		next := e.Next()
		w := e.Value.(*waiter)
		if c.running >= c.opts.MaxRuns || c.reserved+w.memory > c.opts.MemoryBytes {
			return
		}
		if c.perSession[w.session] >= c.opts.MaxRunsPerSession {
			e = next
			continue
		}
		c.queue.Remove(e)
		c.running++
		c.peakRun = max(c.peakRun, c.running)
		c.perSession[w.session]++
		c.add(w.memory)
		c.sandboxes += w.memory
		c.limitGoHeap()
		w.ticket = &Ticket{c: c, session: w.session, memory: w.memory}
		close(w.ready)
		e = next
	}
}

// add reserves n bytes (n may be negative). c.mu is held.
func (c *Controller) add(n int64) {
	c.reserved += n
	c.peak = max(c.peak, c.reserved)
}

// Stats returns the Controller's state now.
func (c *Controller) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return Stats{Running: c.running, Queued: c.queue.Len(), PeakRunning: c.peakRun, Reserved: c.reserved, PeakReserved: c.peak, Refused: c.refused}
}

// Ticket is an admitted run's hold on the gateway: a slot and its memory.
// Its methods are safe for concurrent use.
type Ticket struct {
	c       *Controller
	session any
	memory  int64

	// payload is what Reserve holds now; released marks a ticket whose
	// run is over. Both under c.mu.
	payload  int64
	released bool
}

// errReleased refuses payloads of a run that has ended.
var errReleased = errors.New("admit: the run's ticket was released")

// Reserve holds n more bytes of payload in flight against the budget. It
// never waits: when the budget cannot hold them it returns a *Refusal
// (limit "memoryBudget"), and the caller drops the payload. A run's
// payloads in flight may not exceed its own memory limit either (limit
// "maxMemoryBytes"): they are copies of data on their way into or out of
// its sandbox.
func (t *Ticket) Reserve(n int64) error {
	if t == nil || n <= 0 {
		return nil
	}
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.released {
		return errReleased
	}
	if t.payload+n > t.memory {
		return &Refusal{Limit: "maxMemoryBytes", Value: t.memory,
			Message: fmt.Sprintf("%d bytes of data would bring the run's data in flight (tool results not yet taken into the sandbox, inputs not yet sent) to more than its maxMemoryBytes (%d)", n, t.memory),
			Hint:    "await results before starting more calls, or ask for less per call (a page, a filter, a smaller range)"}
	}
	if c.reserved+n > c.opts.MemoryBytes {
		return &Refusal{Limit: LimitMemory, Value: c.opts.MemoryBytes,
			Message: fmt.Sprintf("%d bytes of data in flight do not fit in the gateway's memory budget (%d of %d bytes are held by running scripts and their data)", n, c.reserved, c.opts.MemoryBytes),
			Hint:    "ask for less at once (a page, a filter, a smaller range), or retry when the gateway is less busy"}
	}
	t.payload += n
	c.add(n)
	return nil
}

// Unreserve gives back n bytes that Reserve held.
func (t *Ticket) Unreserve(n int64) {
	if t == nil || n <= 0 {
		return
	}
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.released {
		return
	}
	n = min(n, t.payload)
	t.payload -= n
	c.add(-n)
	c.collect(n)
	c.pump()
}

// collectEvery is how many bytes of payloads released make the Controller
// ask for a garbage collection.
const collectEvery = 4 << 20

// collect notes n bytes of payloads released. A payload leaves garbage on
// the Go heap several times its size (the upstream's message as read, its
// decoded form, the JSON handed to the sandbox), and the gateway runs with
// GOGC at 400 (cmd/codemode) for the sake of small calls: ten 15 MB results
// left 700 MB of garbage waiting for a collection that the heap's small
// live size put off. Every collectEvery bytes released, a collection runs
// in the background (one at a time; releases during one ask for another),
// which costs little next to moving that much data. c.mu is held.
func (c *Controller) collect(n int64) {
	c.freed += n
	if c.freed < collectEvery || c.collecting {
		return
	}
	c.freed, c.collecting = 0, true
	go func() {
		for {
			runtime.GC()
			c.mu.Lock()
			again := c.freed >= collectEvery
			c.freed, c.collecting = 0, again
			c.mu.Unlock()
			if !again {
				return
			}
		}
	}()
}

// Release ends the run's hold: its slot, its memory and whatever payload it
// still holds. It is idempotent.
func (t *Ticket) Release() {
	if t == nil {
		return
	}
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.released {
		return
	}
	t.released = true
	c.running--
	if c.perSession[t.session]--; c.perSession[t.session] <= 0 {
		delete(c.perSession, t.session)
	}
	c.add(-(t.memory + t.payload))
	c.sandboxes -= t.memory
	c.limitGoHeap()
	t.payload = 0
	c.pump()
}
