package sandbox

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
)

// A deterministic run (Options.Deterministic) depends only on its code, its
// seed, its start time and what its host operations answer, never on the
// machine's speed or the order in which operations happen to finish:
//
//   - Math.random is seeded; Date reads a virtual clock that starts at
//     Deterministic.Now and moves only when timers fire.
//   - Timers fire in virtual time: when nothing else can happen, the clock
//     jumps to the earliest timer, which fires at once (in the order the
//     timers were scheduled, for equal times). Log entries carry virtual
//     milliseconds.
//   - Host operations take no virtual time. The operations the script
//     started in one turn (a round: a Promise.all, or one await) start in
//     the order the script made them (each handler begins once the previous
//     one has returned or called Release), and the loop waits for the whole
//     round before settling its promises, in that order, and before any
//     timer fires. So `Promise.race([tool(), sleep(10)])` always sees the
//     tool first, however slow it is.
//
// Handlers may also return Suspend (the operation stays pending: the run
// ends, Suspended, once nothing else can happen) or an *Abort (the run ends
// at once with its diagnostic, which the script cannot catch). Replay mode
// builds on the three: it reruns a script with the results recorded so far,
// suspends at the first call it has no result for, and aborts when the
// script diverges from the record.

// Suspend, returned by a Handler, leaves the operation pending for the rest
// of the run: its promise is never settled. The run ends, with
// Result.Suspended set and no result, as soon as only suspended operations
// could let the script go on; the script is not told. Rejections unhandled
// at that point are not reported (a later run that gets the results may
// handle them).
var Suspend = errors.New("sandbox: operation suspended")

// Abort, returned by a Handler, ends the run at once with Diagnostic, as a
// fatal error the script cannot catch.
type Abort struct {
	Diagnostic diag.Diagnostic
}

func (a *Abort) Error() string { return "sandbox: run aborted: " + a.Diagnostic.Message }

type releaseKey struct{}

// Release lets the next host operation of the same round start, in a
// deterministic run, before this one's handler returns: a handler calls it
// once it has done what must happen in the script's order (counting,
// numbering the call) and is about to wait for something slow (an upstream
// server). It does nothing in other runs, or when called again.
func Release(ctx context.Context) {
	if f, ok := ctx.Value(releaseKey{}).(func()); ok {
		f()
	}
}

// virtualEpoch is the origin of a deterministic run's timer heap; only
// differences from it matter.
var virtualEpoch = time.Unix(0, 0)

var closedTurn = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// dispatchInOrder starts a round of host operations on workers, each
// handler once the previous one has returned or released its turn.
func (r *run) dispatchInOrder(q []hostCall) {
	prev := closedTurn
	for _, c := range q {
		turn, next := prev, make(chan struct{})
		var once sync.Once
		release := func() { once.Do(func() { close(next) }) }
		r.workers.Add(1)
		goWork(func() {
			defer r.workers.Done()
			defer release()
			select {
			case <-turn:
			case <-r.opCtx.Done():
				// The run is over; the handler sees a cancelled ctx.
			}
			done := r.perform(context.WithValue(r.opCtx, releaseKey{}, release), c)
			release()
			select {
			case r.completions <- done:
			case <-r.opCtx.Done():
			}
		})
		prev = next
	}
}

// awaitRound waits for every operation in flight that can complete, then
// settles them in the order the script started them. It returns false when
// the run is over: failed, or suspended (an operation of the round will
// never complete; the others are not settled, so that the run that resumes
// with every result settles the round together, as this one would have).
func (r *run) awaitRound() bool {
	wait := time.NewTimer(time.Until(r.deadline))
	defer wait.Stop()
	var got []completion
	for r.inflight-r.suspended-len(got) > 0 {
		select {
		case c := <-r.completions:
			if c.suspend {
				r.suspended++
				continue
			}
			got = append(got, c)
		case <-wait.C:
			r.timeout()
			return false
		case <-r.ctx.Done():
			r.interrupted()
			return false
		}
	}
	slices.SortFunc(got, func(a, b completion) int { return a.id - b.id })
	if r.suspended > 0 {
		for _, c := range got {
			if c.abort != nil {
				r.fatal(*c.abort)
				return false
			}
		}
		r.res.Suspended = true
		return false
	}
	for _, c := range got {
		if !r.complete(c) {
			return false
		}
	}
	return true
}

// advance moves virtual time to the earliest timer and fires every timer
// due then. With Deterministic.WaitTimers it first waits until as much real
// time has passed since the start. It returns false when the run is over.
func (r *run) advance() bool {
	at := r.timers[0].at.Sub(virtualEpoch)
	if at > r.vnow {
		r.vnow = at
		if err := r.vm.setClock(r.opts.Deterministic.Now.UnixMilli() + r.vnow.Milliseconds()); err != nil {
			r.engineFailure(err, "")
			return false
		}
	}
	if r.opts.Deterministic.WaitTimers {
		if d := time.Until(r.start.Add(r.vnow)); d > 0 {
			wait := time.NewTimer(min(d, time.Until(r.deadline)))
			select {
			case <-wait.C:
			case <-r.ctx.Done():
				wait.Stop()
				r.interrupted()
				return false
			}
		}
	}
	if !time.Now().Before(r.deadline) {
		r.timeout()
		return false
	}
	r.fireDue()
	return !r.failed
}
