package sandbox

import "time"

// Host operations run on worker goroutines that outlive one call. A new
// goroutine starts with a small stack and grows it (by copying) on its way
// through a handler: JSON, schema validation, the MCP client. Reusing
// workers keeps their grown stacks; idle ones exit after a while.

// idleWorkers is unbuffered: a send succeeds only if a worker is waiting.
var idleWorkers = make(chan func())

const workerIdle = 10 * time.Second

// goWork runs f on an idle worker, or on a new one if none is idle.
func goWork(f func()) {
	select {
	case idleWorkers <- f:
	default:
		go worker(f)
	}
}

func worker(f func()) {
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		f()
		t.Reset(workerIdle)
		select {
		case f = <-idleWorkers:
		case <-t.C:
			return
		}
	}
}
