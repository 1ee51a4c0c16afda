package sandbox

import (
	"container/list"
	"hash/maphash"
	"sync"

	"github.com/codemode-mcp/codemode/internal/engine"
)

// Every run imports modules whose text was imported before: the internal
// modules, each server's generated module (the same text until the server's
// tools change), often the agent's own script (agents resubmit scripts, and
// replay reruns one at every step). Parsing is the engine's dearest work per
// byte, so a module is compiled once, written as bytecode, and later runs
// read the bytecode (engine.SetModuleLoader), which makes the same module a
// parse would, in a fraction of the time (docs/BENCHMARKS.md).
//
// The cache holds only what the text determines: bytecode is compiled from
// the module's name and source and from nothing of any run, and each run
// reads its own copy into its own VM, so nothing of one run reaches another
// through it. (Like the transpile cache, it tells a script that measures
// its own start whether the same text ran before, which the script must
// already know to ask.)

// loadModule answers the engine's load of module name: bytecode for a text
// imported before, else the source, with the bytecode to keep.
func (v *qjsVM) loadModule(name string) (engine.Module, error) {
	src, err := v.load(v.m, name)
	if err != nil {
		return engine.Module{}, err
	}
	// Modules of the host's own (not the agent's) need not keep their
	// functions' source text: their functions print as [native code], as
	// the bootstrap's do.
	strip := name != agentSpecifier
	key := moduleKey{name: name, src: src}
	if code := modules.get(key); code != nil {
		return engine.Module{Code: code}, nil
	}
	m := engine.Module{Source: src, Strip: strip}
	if name != agentSpecifier || modules.seen(key) {
		// Most scripts run once: the agent's module is written only when
		// its text comes a second time.
		m.Compiled = func(code []byte) { modules.put(key, code) }
	}
	return m, nil
}

type moduleKey struct{ name, src string }

// moduleCache is a process-wide LRU cache of module bytecode, bounded by
// the bytes of source and bytecode it holds.
type moduleCache struct {
	mu    sync.Mutex
	max   int
	bytes int
	order *list.List // of *moduleEntry, most recently used first
	m     map[moduleKey]*list.Element

	// sightings remembers, by hash, agent sources seen once (a bounded
	// set, cleared when full).
	seed      maphash.Seed
	sightings map[uint64]struct{}
}

type moduleEntry struct {
	key  moduleKey
	code []byte
}

// maxModuleCacheBytes bounds the cache: a few hundred server modules and
// scripts.
const maxModuleCacheBytes = 32 << 20

// maxSightings bounds the set of agent sources seen once.
const maxSightings = 4096

var modules = newModuleCache(maxModuleCacheBytes)

func newModuleCache(max int) *moduleCache {
	return &moduleCache{max: max, order: list.New(), m: map[moduleKey]*list.Element{}, seed: maphash.MakeSeed(), sightings: map[uint64]struct{}{}}
}

func (c *moduleCache) get(k moduleKey) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	el := c.m[k]
	if el == nil {
		return nil
	}
	c.order.MoveToFront(el)
	return el.Value.(*moduleEntry).code
}

func (c *moduleCache) put(k moduleKey, code []byte) {
	size := len(k.name) + len(k.src) + len(code)
	if size > c.max/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok {
		return
	}
	c.m[k] = c.order.PushFront(&moduleEntry{key: k, code: code})
	c.bytes += size
	for c.bytes > c.max {
		last := c.order.Back()
		e := last.Value.(*moduleEntry)
		c.order.Remove(last)
		delete(c.m, e.key)
		c.bytes -= len(e.key.name) + len(e.key.src) + len(e.code)
	}
}

// seen reports whether k's source was seen before, and notes it.
func (c *moduleCache) seen(k moduleKey) bool {
	h := maphash.String(c.seed, k.src)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.sightings[h]; ok {
		return true
	}
	if len(c.sightings) >= maxSightings {
		clear(c.sightings)
	}
	c.sightings[h] = struct{}{}
	return false
}
