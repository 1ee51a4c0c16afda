package catalog

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// ErrUnknownServer is returned for a server id that is not configured.
var ErrUnknownServer = errors.New("unknown server")

// View is the catalog as one run sees it. Safe for concurrent use: tool
// calls and discovery calls of a run run in parallel.
type View struct {
	c *Catalog

	mu      sync.Mutex
	servers map[string]*Server
	errs    map[string]error
	// inflight dedupes concurrent first uses of one server within the run.
	inflight map[string]chan struct{}
	// given up lists servers still starting when a caller's ctx ended.
	givenUp map[string]bool
}

// IDs returns the configured server ids in declaration order.
func (v *View) IDs() []string {
	cs := v.c.Configured()
	ids := make([]string, len(cs))
	for i, s := range cs {
		ids[i] = s.ID
	}
	return ids
}

// Config returns the configuration of server id.
func (v *View) Config(id string) (config.Server, bool) {
	for _, s := range v.c.src.Servers() {
		if s.ID == id && v.c.keep(s) {
			return s, true
		}
	}
	return config.Server{}, false
}

// Server returns server id as of the first time this view asked for it. An
// id that is not configured gives ErrUnknownServer; a server that cannot be
// reached gives the upstream's error, and keeps giving it for the rest of the
// run (a run sees one state of the world).
func (v *View) Server(ctx context.Context, id string) (*Server, error) {
	for {
		v.mu.Lock()
		if s, ok := v.servers[id]; ok {
			v.mu.Unlock()
			return s, nil
		}
		if err, ok := v.errs[id]; ok {
			v.mu.Unlock()
			return nil, err
		}
		if ch, ok := v.inflight[id]; ok {
			v.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if _, ok := v.Config(id); !ok {
			v.mu.Unlock()
			return nil, ErrUnknownServer
		}
		if v.inflight == nil {
			v.inflight = map[string]chan struct{}{}
		}
		ch := make(chan struct{})
		v.inflight[id] = ch
		v.mu.Unlock()

		snap, err := v.c.src.Snapshot(ctx, id)
		var s *Server
		if err == nil {
			s = v.c.server(snap)
		}
		v.mu.Lock()
		delete(v.inflight, id)
		if err != nil {
			// A cancelled ctx is this caller's problem, not the server's:
			// do not pin it for the rest of the run.
			switch {
			case ctx.Err() == nil:
				v.errs[id] = err
				delete(v.givenUp, id)
			case context.Cause(ctx) != errPatience:
				if v.givenUp == nil {
					v.givenUp = map[string]bool{}
				}
				v.givenUp[id] = true
			}
		} else {
			v.servers[id] = s
			delete(v.givenUp, id)
		}
		v.mu.Unlock()
		close(ch)
		return s, err
	}
}

// Cached returns what Server would return for id without waiting: the
// server or the error this view already has for it, and ok false when it
// has neither yet (Server would connect).
func (v *View) Cached(id string) (s *Server, err error, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.servers[id]; ok {
		return s, nil, true
	}
	if err, ok := v.errs[id]; ok {
		return nil, err, true
	}
	return nil, nil, false
}

// All returns every configured server, connecting those not yet seen in
// parallel. Servers that fail are in the error map, not in the slice; the
// slice is in declaration order.
func (v *View) All(ctx context.Context) ([]*Server, map[string]error) {
	ids := v.IDs()
	res := make([]*Server, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = v.Server(ctx, id)
		}()
	}
	wg.Wait()
	var out []*Server
	failed := map[string]error{}
	for i, s := range res {
		if errs[i] != nil {
			failed[ids[i]] = errs[i]
			continue
		}
		out = append(out, s)
	}
	return out, failed
}

// errPatience ends a context from WithPatience.
var errPatience = errors.New("catalog: stopped waiting for now")

// WithPatience bounds how long a caller waits for servers that are still
// starting without giving up on them: a server it stops waiting for is not
// reported by GivenUp, and a later call waits for it again.
func WithPatience(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, errPatience)
}

// GivenUp returns the servers this view stopped waiting for because the
// caller's ctx ended while they were still starting (e.g. the run timed
// out on an import), sorted.
func (v *View) GivenUp() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Sorted(maps.Keys(v.givenUp))
}

// Status reports a server's connection state now (not as of the view).
func (v *View) Status(id string) (upstream.Status, bool) { return v.c.Status(id) }

// Failures returns the servers this view could not reach, and why.
func (v *View) Failures() map[string]error {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make(map[string]error, len(v.errs))
	for k, e := range v.errs {
		out[k] = e
	}
	return out
}

// Seen returns the servers this view has taken a snapshot of.
func (v *View) Seen() []*Server {
	v.mu.Lock()
	defer v.mu.Unlock()
	var out []*Server
	for _, id := range v.IDs() {
		if s, ok := v.servers[id]; ok {
			out = append(out, s)
		}
	}
	return out
}
