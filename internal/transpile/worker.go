package transpile

import (
	"bufio"
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/codemode-mcp/codemode/internal/reexec"
)

// esbuild cannot be stopped: a call to api.Transform runs to its end, and
// some small inputs make it run for minutes or allocate until the process
// dies (a TypeScript enum whose members double a string folds constants
// into gigabytes). So every esbuild call runs in a worker process, this
// same executable started in the "esbuild" mode (package reexec), which is
// killed when its time is up and whose memory is capped. A killed or
// crashed worker is replaced at the next call. Results are cached in the
// gateway (see Module), so a repeated script does not cross to a worker.
//
// A worker serves one call at a time, over two pipes (its descriptors 3
// and 4) carrying gob-encoded requests and responses; killing it for one
// call ends no other. At most cap(slots) calls run at once.

// workerMode is the reexec mode of an esbuild worker.
const workerMode = "esbuild"

func init() { reexec.Register(workerMode, workerMain) }

// ErrBusy, ErrTimeout and ErrMemory are what Transform returns when ctx's
// deadline passed while the call waited for a worker, when the call was
// stopped at that deadline, and when it ran out of its memory. ErrTooLarge
// is a result larger than MaxOutput allows: the worker drops it.
var (
	ErrBusy     = errors.New("no esbuild worker was free in time")
	ErrTimeout  = errors.New("esbuild did not finish in time")
	ErrMemory   = errors.New("esbuild ran out of memory")
	ErrTooLarge = errors.New("esbuild's output is too large")
)

// MaxOutput is the most bytes of code and source map a transform of n
// bytes of input may return. esbuild inlines the values of enum members
// and constants at each use: a 40 KB script whose enum member is a 20 KB
// string used 2,000 times became 40 MB of code, and each warning quotes
// its whole source line (800 duplicate keys on a 95 KB line made 80 MB of
// warnings), which the gateway decoded, kept and cached (370 and 556 MB of
// its memory, outside any budget). Ordinary code comes out about the size
// it went in; the bound leaves room for lowering and inlining.
func MaxOutput(n int) int { return 1<<20 + 8*n }

// Errors past maxMessages (the first few are what a diagnostic reports:
// later ones cascade) and warnings (the gateway reports none) are dropped
// in the worker, for the same reason.
const maxMessages = 20

// WorkerMemory caps the memory of an esbuild worker, in bytes of heap on
// top of what the process holds when it starts. The largest script the
// gateway accepts (run.MaxScriptBytes) transforms in a small fraction of it
// (docs/BENCHMARKS.md).
const WorkerMemory = 512 << 20

// Transform runs esbuild's api.Transform on input in a worker process. It
// returns ErrTimeout when ctx's deadline passed first (the worker is
// killed), ErrBusy when it passed before a worker was free, ctx.Err() when
// ctx was cancelled, ErrMemory when the worker exceeded WorkerMemory, and
// another error when no worker could run the call (it could not start, or
// it crashed). Every use of esbuild in the gateway goes through it; ctx
// should carry a deadline, as esbuild has none of its own (Module's is
// transformTimeout).
func Transform(ctx context.Context, input string, opts api.TransformOptions) (api.TransformResult, error) {
	select {
	case slots <- struct{}{}:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return api.TransformResult{}, ErrBusy
		}
		return api.TransformResult{}, ctx.Err()
	}
	defer func() { <-slots }()
	w, err := workers.get()
	if err != nil {
		return api.TransformResult{}, err
	}
	res, err := w.transform(ctx, input, opts)
	if err != nil {
		w.kill()
		return api.TransformResult{}, err
	}
	workers.put(w)
	return res, nil
}

func ctxError(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return ErrTimeout
	}
	return ctx.Err()
}

// slots bounds the esbuild calls running at once, and so the workers.
var slots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

// workerPool keeps the idle workers.
type workerPool struct {
	mu   sync.Mutex
	idle []*worker
}

var workers workerPool

// live counts the worker processes not yet reaped.
var live atomic.Int32

func (p *workerPool) get() (*worker, error) {
	p.mu.Lock()
	for n := len(p.idle); n > 0; n-- {
		w := p.idle[n-1]
		p.idle = p.idle[:n-1]
		select {
		case <-w.exited: // died while idle (killed from outside)
			continue
		default:
		}
		p.mu.Unlock()
		return w, nil
	}
	p.mu.Unlock()
	return startWorker()
}

func (p *workerPool) put(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) < cap(slots) {
		p.idle = append(p.idle, w)
		return
	}
	w.kill()
}

// StopWorkers ends the idle workers. They end on their own when the
// gateway exits (their request pipe closes); tests that count processes
// call it.
func StopWorkers() {
	workers.mu.Lock()
	idle := workers.idle
	workers.idle = nil
	workers.mu.Unlock()
	for _, w := range idle {
		w.kill()
		<-w.exited
	}
}

// worker is a running worker process, seen from the gateway.
type worker struct {
	cmd    *exec.Cmd
	reqs   *os.File // the write end of its request pipe
	out    *bufio.Writer
	enc    *gob.Encoder
	resps  *os.File // the read end of its response pipe
	dec    *gob.Decoder
	stderr *head
	exited chan struct{} // closed once the process has exited and been reaped
}

func startWorker() (*worker, error) {
	cmd, err := reexec.Command(workerMode)
	if err != nil {
		return nil, err
	}
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("starting an esbuild worker: %w", err)
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, fmt.Errorf("starting an esbuild worker: %w", err)
	}
	w := &worker{cmd: cmd, reqs: reqW, resps: respR, stderr: &head{}, exited: make(chan struct{})}
	cmd.ExtraFiles = []*os.File{reqR, respW} // descriptors 3 and 4
	cmd.Stderr = w.stderr
	err = cmd.Start()
	reqR.Close()
	respW.Close()
	if err != nil {
		reqW.Close()
		respR.Close()
		return nil, fmt.Errorf("starting an esbuild worker: %w", err)
	}
	live.Add(1)
	go func() {
		cmd.Wait()
		reqW.Close()
		respR.Close()
		live.Add(-1)
		close(w.exited)
	}()
	w.out = bufio.NewWriter(reqW)
	w.enc = gob.NewEncoder(w.out)
	w.dec = gob.NewDecoder(bufio.NewReader(respR))
	return w, nil
}

type workRequest struct {
	Input   string
	Options api.TransformOptions
}

type workResponse struct {
	Result api.TransformResult
	// Panic is what esbuild panicked with, or "".
	Panic string
	// TooLarge is the size of a result dropped for exceeding MaxOutput.
	TooLarge int
}

// transform makes one call. Its I/O runs on the caller's goroutine; ctx
// ending kills the process, which ends a blocked write or read.
func (w *worker) transform(ctx context.Context, input string, opts api.TransformOptions) (api.TransformResult, error) {
	var killed bool
	var mu sync.Mutex
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		killed = true
		mu.Unlock()
		w.kill()
	})
	defer stop()
	var resp workResponse
	err := w.enc.Encode(workRequest{Input: input, Options: opts})
	if err == nil {
		err = w.out.Flush()
	}
	if err == nil {
		err = w.dec.Decode(&resp)
	}
	if err != nil {
		mu.Lock()
		k := killed
		mu.Unlock()
		if k {
			return api.TransformResult{}, ctxError(ctx)
		}
		return api.TransformResult{}, w.failure(err)
	}
	if resp.Panic != "" {
		return api.TransformResult{}, fmt.Errorf("esbuild failed: %s", resp.Panic)
	}
	if resp.TooLarge > 0 {
		return api.TransformResult{}, fmt.Errorf("%w: %d bytes of code and source map from %d bytes of input (at most %d)", ErrTooLarge, resp.TooLarge, len(input), MaxOutput(len(input)))
	}
	return resp.Result, nil
}

// failure explains why the worker stopped answering.
func (w *worker) failure(err error) error {
	w.kill()
	select {
	case <-w.exited:
	case <-time.After(5 * time.Second):
		return fmt.Errorf("the esbuild worker stopped answering: %v", err)
	}
	msg := w.stderr.String()
	// The Go runtime's "fatal error: out of memory" (and "cannot allocate
	// memory"), or a race-detector build's "ThreadSanitizer failed to
	// allocate": the memory limit.
	for _, s := range []string{"out of memory", "cannot allocate memory", "failed to allocate"} {
		if strings.Contains(msg, s) {
			return ErrMemory
		}
	}
	// The runtime does not always fail cleanly at the hard limit: an mmap
	// refused inside the collector has ended in a SIGSEGV instead of
	// "out of memory". A worker that crashed after growing to most of its
	// cap is reported as out of memory, which is what happened.
	if nearMemoryLimit(w.cmd.ProcessState) {
		return ErrMemory
	}
	state := w.cmd.ProcessState.String()
	if msg == "" {
		msg = "no output"
	}
	return fmt.Errorf("the esbuild worker exited (%s): %s (a program that transpiles must call reexec.Init first, in main or TestMain)", state, strings.TrimSpace(msg))
}

// kill ends the process; it is reaped in the background.
func (w *worker) kill() {
	w.cmd.Process.Kill()
}

// head keeps the first bytes a worker wrote to its standard error: a Go
// fatal error ("fatal error: out of memory") comes first.
type head struct {
	mu  sync.Mutex
	buf []byte
}

const headBytes = 2 << 10

func (t *head) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := headBytes - len(t.buf); n > 0 {
		t.buf = append(t.buf, p[:min(n, len(p))]...)
	}
	return len(p), nil
}

func (t *head) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.ToValidUTF8(t.buf, nil))
}

// --- the worker process ------------------------------------------------------

// workerMain serves esbuild calls until its request pipe closes (the
// gateway exited or stopped it).
func workerMain() {
	// A fatal error (out of memory) is reported in one line, without the
	// goroutine dump.
	debug.SetTraceback("none")
	limitMemory(WorkerMemory)
	reqs, resps := os.NewFile(3, "requests"), os.NewFile(4, "responses")
	dec := gob.NewDecoder(bufio.NewReader(reqs))
	out := bufio.NewWriter(resps)
	enc := gob.NewEncoder(out)
	for {
		var req workRequest
		if err := dec.Decode(&req); err != nil {
			if !errors.Is(err, io.EOF) {
				fmt.Fprintln(os.Stderr, "esbuild worker:", err)
			}
			return
		}
		resp := serveOne(req)
		if err := enc.Encode(resp); err != nil {
			fmt.Fprintln(os.Stderr, "esbuild worker:", err)
			return
		}
		if err := out.Flush(); err != nil {
			return
		}
	}
}

func serveOne(req workRequest) (resp workResponse) {
	defer func() {
		if p := recover(); p != nil {
			resp = workResponse{Panic: fmt.Sprint(p)}
		}
	}()
	r := api.Transform(req.Input, req.Options)
	if n := len(r.Code) + len(r.Map) + len(r.LegalComments); n > MaxOutput(len(req.Input)) {
		return workResponse{TooLarge: n}
	}
	r.Warnings = nil
	if len(r.Errors) > maxMessages {
		r.Errors = r.Errors[:maxMessages]
	}
	// Detail is plugin data, which a transform has none of; gob could not
	// encode an arbitrary value there.
	for i := range r.Errors {
		r.Errors[i].Detail = nil
		if len(r.Errors[i].Notes) > maxMessages {
			r.Errors[i].Notes = r.Errors[i].Notes[:maxMessages]
		}
	}
	return workResponse{Result: r}
}

// limitMemory caps this process's heap at limit bytes more than it holds
// now: the Go runtime's soft limit makes the collector work hard as the
// heap nears it, and the hard limit (limitData, where the platform has
// one) makes the allocation that crosses it fail, which the runtime
// reports as a fatal "out of memory".
func limitMemory(limit int64) {
	debug.SetMemoryLimit(limit * 3 / 4)
	if err := limitData(limit); err != nil {
		fmt.Fprintln(os.Stderr, "esbuild worker: no hard memory limit:", err)
	}
}
