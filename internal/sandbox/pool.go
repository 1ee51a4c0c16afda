package sandbox

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// vmPool keeps a few prepared, never-used VMs ready, so that a run does not
// pay for creating a VM and running the bootstrap (most of an empty run's
// cost). A VM leaves the pool once and is closed after its run: no VM ever
// serves two runs (§1.4).
type vmPool struct {
	ready   chan *qjsVM
	closeQ  chan vm
	closing atomic.Bool // the closer is closing a VM
	start   sync.Once
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
				p.closing.Store(true)
				v.close()
				p.closing.Store(false)
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

// WarmPool blocks until the pool is full and the VMs of earlier runs are
// closed: the state of a gateway between requests. Runs never wait for it;
// benchmarks call it to measure a run apart from the preparing and closing
// of VMs, which happen off the request path.
func WarmPool() {
	pool.init()
	for len(pool.ready) < cap(pool.ready) || len(pool.closeQ) > 0 || pool.closing.Load() {
		time.Sleep(100 * time.Microsecond)
	}
}
