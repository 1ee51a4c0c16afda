package sandbox

import (
	"runtime"
	"sync"
	"time"
)

// vmPool keeps a few prepared, never-used VMs ready, so that a run does not
// pay for creating a VM and running the bootstrap (most of an empty run's
// cost). A VM leaves the pool once and is closed after its run: no VM ever
// serves two runs (§1.4).
type vmPool struct {
	ready  chan *qjsVM
	closeQ chan vm
	start  sync.Once
}

var pool = &vmPool{
	ready:  make(chan *qjsVM, max(2, runtime.GOMAXPROCS(0))),
	closeQ: make(chan vm, 64),
}

func (p *vmPool) init() {
	p.start.Do(func() {
		// One filler and one closer. They live as long as the process; an
		// idle pool costs a few hundred KiB per VM and no CPU.
		go func() {
			for {
				v, err := newQJSVM()
				if err != nil {
					// Out of memory, most likely: get() creates VMs
					// synchronously meanwhile and reports the error.
					time.Sleep(time.Second)
					continue
				}
				p.ready <- v
			}
		}()
		go func() {
			for v := range p.closeQ {
				v.close()
			}
		}()
	})
}

// get returns a VM no run has used, from the pool if one is ready.
func (p *vmPool) get() (vm, error) {
	p.init()
	select {
	case v := <-p.ready:
		return v, nil
	default:
		return newQJSVM()
	}
}

// discard closes a used VM, off the caller's path when the closer keeps up.
func (p *vmPool) discard(v vm) {
	v.bind(noHost{})
	select {
	case p.closeQ <- v:
	default:
		v.close()
	}
}

// waitReady blocks until n prepared VMs are waiting (at most the pool's
// capacity), for benchmarks that measure a run's latency apart from the
// cost of preparing its VM.
func (p *vmPool) waitReady(n int) {
	p.init()
	n = min(n, cap(p.ready))
	for len(p.ready) < n {
		time.Sleep(100 * time.Microsecond)
	}
}

// WarmPool blocks until the pool holds a prepared VM for the next run. Runs
// never wait for it; benchmarks call it to measure a run apart from the
// creation of its VM, which happens off the request path.
func WarmPool() { pool.waitReady(1) }
