//go:build !(386 || arm)

package engine

import (
	"errors"
	"reflect"
	"sync"
	"unsafe"

	"modernc.org/libc"
	lib "modernc.org/libquickjs"
	"modernc.org/quickjs"
)

// A VM that every run gets fresh has to be closed after every run, and
// closing one the engine's way (JS_FreeRuntime: finalize and free every
// object, then every shape and atom, one by one) cost as much as a third of
// making it (docs/BENCHMARKS.md). Nothing of a run survives its VM, so
// freeing it object by object is wasted work: a VM made by NewVM takes its
// memory from the C heap through allocation functions of this package,
// which note every block it takes, and Drop hands all of them back at once.
//
// The engine allocates through those functions only for its arenas (small
// objects are carved out of them) and for large blocks, a few dozen calls
// for a VM that ran an ordinary script, so the bookkeeping costs nothing
// measurable. quickjs.NewVM cannot be given allocation functions, so NewVM
// makes the runtime with JS_NewRuntime2 and assembles the quickjs.VM around
// it as quickjs.NewVM does (every field it sets is in layout.go); Drop
// closes the quickjs.VM the way quickjs.VM.Close closes one that a Go panic
// abandoned, which releases everything of it that is not engine memory and
// frees no engine memory, and then frees the engine's blocks.

// heap is the blocks one runtime holds. It is used by the goroutine that
// runs the VM, as the VM is.
type heap struct {
	blocks map[uintptr]struct{}
}

// heaps finds a runtime's heap by the handle in its malloc state's opaque
// field (0 for runtimes this package did not make).
var heaps struct {
	sync.RWMutex
	byHandle []*heap // handle h is byHandle[h-1]
	unused   []uintptr
}

func newHeap() (uintptr, *heap) {
	h := &heap{blocks: map[uintptr]struct{}{}}
	heaps.Lock()
	defer heaps.Unlock()
	if n := len(heaps.unused); n > 0 {
		handle := heaps.unused[n-1]
		heaps.unused = heaps.unused[:n-1]
		heaps.byHandle[handle-1] = h
		return handle, h
	}
	heaps.byHandle = append(heaps.byHandle, h)
	return uintptr(len(heaps.byHandle)), h
}

func releaseHeap(handle uintptr) {
	heaps.Lock()
	defer heaps.Unlock()
	heaps.byHandle[handle-1] = nil
	heaps.unused = append(heaps.unused, handle)
}

// heapOf returns the heap of the malloc state at state, or nil.
func heapOf(state uintptr) *heap {
	handle := (*lib.TJSMallocState)(cMemory(state)).Fopaque
	if handle == 0 {
		return nil
	}
	heaps.RLock()
	defer heaps.RUnlock()
	if int(handle) > len(heaps.byHandle) {
		return nil
	}
	return heaps.byHandle[handle-1]
}

// engineDefaults are the engine's own allocation functions and quickjs's
// interrupt handler, read once from a VM made by quickjs.NewVM.
var engineDefaults = sync.OnceValues(func() (*engineFuncs, error) {
	if err := checkLayout(); err != nil {
		return nil, err
	}
	m, err := quickjs.NewVM()
	if err != nil {
		return nil, err
	}
	defer m.Close()
	_, rt, _, ok := handles(m)
	if !ok {
		return nil, ErrLayout
	}
	r := (*lib.TJSRuntime)(cMemory(rt))
	return &engineFuncs{mf: r.Fmalloc_ctx.Fmf, interrupt: r.Finterrupt_handler}, nil
})

type engineFuncs struct {
	mf        lib.TJSMallocFunctions
	interrupt uintptr
}

func callMalloc(f uintptr, tls *libc.TLS, state uintptr, size uint64) uintptr {
	return (*(*func(*libc.TLS, uintptr, uint64) uintptr)(unsafe.Pointer(&struct{ uintptr }{f})))(tls, state, size)
}

func callRealloc(f uintptr, tls *libc.TLS, state, ptr uintptr, size uint64) uintptr {
	return (*(*func(*libc.TLS, uintptr, uintptr, uint64) uintptr)(unsafe.Pointer(&struct{ uintptr }{f})))(tls, state, ptr, size)
}

func callFree(f uintptr, tls *libc.TLS, state, ptr uintptr) {
	(*(*func(*libc.TLS, uintptr, uintptr))(unsafe.Pointer(&struct{ uintptr }{f})))(tls, state, ptr)
}

// heapMalloc, heapRealloc and heapFree are the engine's functions (which
// keep its accounting and enforce its memory limit), noting the blocks.
// They also report an allocation that failed at the limit, as the
// functions WrapAllocator installs do.
func heapMalloc(tls *libc.TLS, state uintptr, size uint64) uintptr {
	d, _ := engineDefaults()
	p := callMalloc(d.mf.Fjs_malloc, tls, state, size)
	if p == 0 {
		exhausted(state)
		return 0
	}
	if h := heapOf(state); h != nil {
		h.blocks[p] = struct{}{}
	}
	return p
}

func heapRealloc(tls *libc.TLS, state, ptr uintptr, size uint64) uintptr {
	d, _ := engineDefaults()
	p := callRealloc(d.mf.Fjs_realloc, tls, state, ptr, size)
	if p == 0 && size != 0 {
		exhausted(state) // ptr is still the caller's
		return 0
	}
	if h := heapOf(state); h != nil {
		if ptr != 0 {
			delete(h.blocks, ptr)
		}
		if p != 0 {
			h.blocks[p] = struct{}{}
		}
	}
	return p
}

func heapFree(tls *libc.TLS, state, ptr uintptr) {
	if ptr == 0 {
		return
	}
	if h := heapOf(state); h != nil {
		delete(h.blocks, ptr)
	}
	d, _ := engineDefaults()
	callFree(d.mf.Fjs_free, tls, state, ptr)
}

// NewVM returns a new VM whose engine memory Drop frees at once, and its
// Engine (attached, as by Attach). Close it with Engine.Drop, not
// quickjs.VM.Close.
func NewVM() (*quickjs.VM, *Engine, error) {
	d, err := engineDefaults()
	if err != nil {
		return nil, nil, err
	}
	handle, h := newHeap()
	tls := libc.NewTLS()
	fail := func(err error) (*quickjs.VM, *Engine, error) {
		for p := range h.blocks {
			libc.Xfree(tls, p)
		}
		tls.Close()
		releaseHeap(handle)
		return nil, nil, err
	}
	mf := lib.TJSMallocFunctions{
		Fjs_malloc:             funcPtr(heapMalloc),
		Fjs_free:               funcPtr(heapFree),
		Fjs_realloc:            funcPtr(heapRealloc),
		Fjs_malloc_usable_size: d.mf.Fjs_malloc_usable_size,
	}
	pmf := tls.Alloc(int(unsafe.Sizeof(mf)))
	*(*lib.TJSMallocFunctions)(cMemory(pmf)) = mf
	rt := lib.XJS_NewRuntime2(tls, pmf, handle) // copies mf
	tls.Free(int(unsafe.Sizeof(mf)))
	if rt == 0 {
		return fail(errors.New("failed to create a new JavaScript runtime"))
	}
	// As quickjs's newRuntime does: the stack limit counts the C stack's
	// slots, about one per JavaScript call frame.
	lib.XJS_SetMaxStackSize(tls, rt, lib.MaxStackSlots)
	argv := libc.Xcalloc(tls, 2, libc.Tsize_t(unsafe.Sizeof(lib.TJSValue{})))
	intr := libc.Xcalloc(tls, 1, 16) // quickjs's interruptData: an int32 flag, an int64 deadline
	ctx := lib.XJS_NewContext(tls, rt)
	if argv == 0 || intr == 0 || ctx == 0 {
		libc.Xfree(tls, argv)
		libc.Xfree(tls, intr)
		return fail(errors.New("failed to create a new JavaScript context"))
	}
	lib.XJS_SetInterruptHandler(tls, rt, d.interrupt, intr)
	m, err := assembleVM(tls, rt, ctx, argv, intr)
	if err != nil {
		libc.Xfree(tls, argv)
		libc.Xfree(tls, intr)
		return fail(err)
	}
	e, err := Attach(m)
	if err != nil {
		libc.Xfree(tls, argv)
		libc.Xfree(tls, intr)
		return fail(err)
	}
	e.heap, e.heapHandle = h, handle
	return m, e, nil
}

// assembleVM makes the quickjs.VM of runtime rt and context ctx, as
// quickjs.NewVM does (its runtime.newVM): the fields listed in layout.go.
func assembleVM(tls *libc.TLS, rt, ctx, argv, intr uintptr) (m *quickjs.VM, err error) {
	defer func() {
		if recover() != nil {
			m, err = nil, ErrLayout
		}
	}()
	m = new(quickjs.VM)
	v := reflect.ValueOf(m).Elem()
	set := func(f reflect.Value, x any) {
		reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(x).Convert(f.Type()))
	}
	ir := v.FieldByName("intr")
	interrupter := reflect.New(ir.Type().Elem())
	set(interrupter.Elem().FieldByName("data"), intr)
	set(ir, interrupter.Interface())
	st := v.FieldByName("state")
	r := reflect.New(st.FieldByName("runtime").Type().Elem())
	set(r.Elem().FieldByName("cRuntime"), rt)
	set(r.Elem().FieldByName("tls"), tls)
	set(st.FieldByName("runtime"), r.Interface())
	set(st.FieldByName("cContext"), ctx)
	set(st.FieldByName("interruptData"), intr)
	set(st.FieldByName("toStringArgv"), argv)
	set(st.FieldByName("int32_16"), lib.XNewInt32(tls, ctx, 16))
	set(st.FieldByName("int32_2"), lib.XNewInt32(tls, ctx, 2))
	return m, nil
}

// Drop closes the VM of an Engine made by NewVM: it detaches the Engine
// (without freeing anything through the engine), closes the quickjs.VM as
// one a panic abandoned (which releases its loader, its Go functions, its
// interrupt data and its C stack, and frees no engine memory), then frees
// every block of engine memory the VM held. No JavaScript of the VM may be
// running, and nothing may use the VM or its Values afterwards.
func (e *Engine) Drop() {
	if e.heap == nil {
		e.Detach()
		e.vm.Close()
		return
	}
	e.unregister()
	tls, blocks := e.tls, e.heap.blocks
	// The quickjs.VM is closed before its runtime's memory is freed:
	// quickjs files a VM's module loader process-wide under the runtime's
	// address and Close deletes the entry by that address. Freed first,
	// the address can be taken by a VM made meanwhile on another goroutine
	// (the pool's filler), whose entry Close would then delete: every
	// import of that VM failed, with an empty exception
	// (TestPooledVMsKeepTheirLoader in package sandbox).
	abandon(e.vm)
	e.vm.Close() // closes tls
	for p := range blocks {
		libc.Xfree(tls, p) // uses its TLS only to trace
	}
	clear(blocks)
	releaseHeap(e.heapHandle)
	e.heap = nil
}

// abandon marks m as quickjs marks a VM a Go panic went through: its Close
// then frees no engine memory.
func abandon(m *quickjs.VM) {
	f := reflect.ValueOf(m).Elem().FieldByName("state").FieldByName("abandoned")
	*(*bool)(unsafe.Pointer(f.UnsafeAddr())) = true
}
