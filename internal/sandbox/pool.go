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
// serves two runs (§1.4). Closing hands the VM's memory back whole
// (engine.Engine.Drop), which costs little, so the run that used it does
// it at once.
//
// Preparing VMs waits for a moment when no run is executing: on a machine
// with few cores it would otherwise take CPU (and memory bandwidth) from
// the run that just took a VM. It waits at most quietWait, and the filler
// does not wait at all when the pool is empty, so a sustained load still
// gets its VMs.
type vmPool struct {
	ready  chan *qjsVM
	active atomic.Int64  // runs holding a VM
	quiet  chan struct{} // signalled when active drops to 0
	start  sync.Once

	// For PoolStats: VMs taken, those made on the spot, and the time runs
	// spent getting theirs.
	gets, misses atomic.Uint64
	waitNanos    atomic.Int64
}

var pool = &vmPool{
	ready: make(chan *qjsVM, max(2, runtime.GOMAXPROCS(0))),
	quiet: make(chan struct{}, 1),
}

const quietWait = 20 * time.Millisecond

// awaitQuiet returns once no run holds a VM, or after quietWait.
func (p *vmPool) awaitQuiet() {
	if p.active.Load() == 0 {
		return
	}
	t := time.NewTimer(quietWait)
	defer t.Stop()
	for p.active.Load() > 0 {
		select {
		case <-p.quiet:
		case <-t.C:
			return
		}
	}
}

func (p *vmPool) init() {
	p.start.Do(func() {
		// One filler. It lives as long as the process; an idle pool costs
		// a few hundred KiB per VM and no CPU.
		go func() {
			for {
				if len(p.ready) > 0 {
					p.awaitQuiet()
				}
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
	})
}

// get returns a VM no run has used, from the pool if one is ready.
func (p *vmPool) get() (vm, error) {
	p.init()
	p.active.Add(1)
	p.gets.Add(1)
	select {
	case v := <-p.ready:
		return v, nil
	default:
	}
	p.misses.Add(1)
	start := time.Now()
	defer func() { p.waitNanos.Add(int64(time.Since(start))) }()
	v, err := newQJSVM()
	if err != nil {
		p.release()
		return nil, err
	}
	return v, nil
}

// release ends a run's hold on the pool (see active).
func (p *vmPool) release() {
	if p.active.Add(-1) == 0 {
		select {
		case p.quiet <- struct{}{}:
		default:
		}
	}
}

// discard closes a used VM.
func (p *vmPool) discard(v vm) {
	p.release()
	v.bind(noHost{})
	v.close()
}

// WarmPool blocks until the pool is full: the state of a gateway between
// requests. Runs never wait for it; benchmarks call it to measure a run
// apart from the preparing of VMs, which happens off the request path.
func WarmPool() {
	pool.init()
	for len(pool.ready) < cap(pool.ready) {
		time.Sleep(100 * time.Microsecond)
	}
}

// PoolStats is the state of the pool of prepared VMs, for metrics.
type PoolStats struct {
	// Ready is how many prepared VMs wait for a run; Capacity is how many
	// the pool keeps.
	Ready, Capacity int
	// InUse is how many runs hold a VM now.
	InUse int64
	// Gets counts the VMs runs took; Misses those made on the spot
	// because none was ready.
	Gets, Misses uint64
	// Wait is the total time runs spent waiting for a VM to be made
	// (a VM taken from the pool costs no wait).
	Wait time.Duration
}

// Pool reports the pool's state.
func Pool() PoolStats {
	return PoolStats{
		Ready: len(pool.ready), Capacity: cap(pool.ready), InUse: pool.active.Load(),
		Gets: pool.gets.Load(), Misses: pool.misses.Load(), Wait: time.Duration(pool.waitNanos.Load()),
	}
}
