package testutil

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// Tests never assert how long something took, and never sleep to let
// something happen: they wait for the event itself (a channel, a pipe, a
// process's exit, a result). These helpers are for the two cases left:
// waiting on a channel without a deadline of its own, and states that no
// event announces (a goroutine count, another process's exit). Either gives
// up only when the test binary's own deadline (go test -timeout) is near,
// so that the failure names what did not happen instead of dumping every
// goroutine; how loaded the machine is changes how long they wait, never
// whether the test passes.

// margin is how long before the test binary's deadline Wait and Poll give
// up, to report their failure while there is time.
const margin = 15 * time.Second

// expiry is shortly before t's deadline, and false if t has none.
func expiry(t testing.TB) (time.Time, bool) {
	type deadliner interface{ Deadline() (time.Time, bool) }
	if d, ok := t.(deadliner); ok {
		if dl, ok := d.Deadline(); ok {
			return dl.Add(-margin), true
		}
	}
	return time.Time{}, false
}

// Expiry fires shortly before the test binary's deadline (go test
// -timeout), or never: the bound of a wait that has no reason to give up
// sooner, such as a subprocess's answer.
func Expiry(t testing.TB) <-chan time.Time {
	if at, ok := expiry(t); ok {
		return time.After(time.Until(at))
	}
	return nil
}

// Context is a context that ends shortly before the test binary's deadline
// (or when the test ends): for clients and subprocesses that need one.
func Context(t testing.TB) context.Context {
	ctx := context.Background()
	if at, ok := expiry(t); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, at)
		t.Cleanup(cancel)
	}
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	return ctx
}

func limit(t testing.TB) <-chan time.Time { return Expiry(t) }

// Wait waits for a value from ch and returns it; it fails the test, naming
// what, if the test binary's deadline comes first.
func Wait[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-limit(t):
		t.Fatalf("%s did not happen before the test's deadline", what)
		panic("unreachable")
	}
}

// Poll reports whether cond became true before the test binary's deadline
// came near, checking it every few milliseconds. It is for states that no
// event announces; anything a channel, a pipe or a process's exit can
// announce is waited for with that.
func Poll(t testing.TB, cond func() bool) bool {
	t.Helper()
	give := limit(t)
	for !cond() {
		select {
		case <-give:
			return cond()
		default:
		}
		runtime.Gosched()
		time.Sleep(5 * time.Millisecond)
	}
	return true
}
