// Command codemode-bench is codemode's side of the side-by-side benchmark
// harness (the peers' drivers live with the harness, outside this
// repository): it keeps codemode warm, with its upstream connected, and
// runs the harness's scenarios on command, so that codemode, Bifrost and
// UTCP code-mode are measured on the same work in the same run
// (docs/BENCHMARKS.md says how, and records the figures).
//
//	codemode-bench -mode inproc -config F   run.Runner in this process (as `codemode run` and serve use it)
//	codemode-bench -mode http   -config F   start `codemode serve --http`, call codemode_run with go-sdk clients
//	codemode-bench -mode stdio  -config F   start `codemode serve` (stdio), call codemode_run with a go-sdk client
//
// The protocol is the harness's: after warming up (every scenario run and
// checked once) it writes {"ready":true,...}; then it reads one JSON command
// per line on stdin and writes one JSON answer per command to file
// descriptor 3 (stdout if 3 is not open), leaving stdout and stderr to logs.
//
//	{"op":"lat","scenario":S,"n":N,"warm":W,"gap_ms":G,"warmpool":B}  N runs one after another (G ms apart) -> median_us, samples_us
//	{"op":"tput","scenario":S,"clients":C,"secs":T}                  C loops for T seconds -> runs, rps, rss
//	{"op":"rss"}                                                      memory of the process running the scripts
//	{"op":"quit"}
//
// Scenarios: empty, two (2 get-sum calls), seq20, par20 (20 calls in
// sequence or in Promise.all), seq20sleep, par20sleep (20 x 50 ms calls),
// all against server-everything's tools in the config's "everything"
// server.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/admit"
	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/reexec"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/sandbox"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

const imp = `import { get_sum, trigger_long_running_operation } from "@codemode/servers/everything";
`

var scripts = map[string]string{
	"empty": `globalThis.__codemode_result__ = 1`,
	"two": imp + `const a = await get_sum({ a: 1, b: 2 });
const b = await get_sum({ a: 3, b: 4 });
globalThis.__codemode_result__ = [a, b].length;`,
	"seq20": imp + `const r = [];
for (let i = 0; i < 20; i++) r.push(await get_sum({ a: i, b: 1 }));
globalThis.__codemode_result__ = r.length;`,
	"par20": imp + `const r = await Promise.all(Array.from({ length: 20 }, (_, i) => get_sum({ a: i, b: 1 })));
globalThis.__codemode_result__ = r.length;`,
	"seq20sleep": imp + `const r = [];
for (let i = 0; i < 20; i++) r.push(await trigger_long_running_operation({ duration: 0.05, steps: 1 }));
globalThis.__codemode_result__ = r.length;`,
	"par20sleep": imp + `const r = await Promise.all(Array.from({ length: 20 }, () => trigger_long_running_operation({ duration: 0.05, steps: 1 })));
globalThis.__codemode_result__ = r.length;`,
}

var want = map[string]string{"empty": "1", "two": "2", "seq20": "20", "par20": "20", "seq20sleep": "20", "par20sleep": "20"}

// runner runs one script and returns its result JSON.
type runner interface {
	run(ctx context.Context, client int, code string) (string, error)
	pid() int
	close()
}

// ---- in process

type inproc struct {
	r   *run.Runner
	mgr *upstream.Manager
}

func newInproc(cfgPath string) (*inproc, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	mgr := upstream.New(cfg.Servers, &upstream.Options{Logger: log, CallTimeout: cfg.CallTimeout})
	cat := catalog.New(mgr)
	// Admitted as `codemode serve` admits its runs (package admit).
	adm := admit.New(cfg.Admission.Options())
	return &inproc{r: run.New(cfg, cat, mgr, &run.Options{Logger: log, Admission: adm}), mgr: mgr}, nil
}

func (p *inproc) run(ctx context.Context, _ int, code string) (string, error) {
	res := p.r.Run(ctx, run.Request{Code: code})
	if len(res.Diagnostics) > 0 {
		b, _ := json.Marshal(res.Diagnostics)
		return string(res.Result), fmt.Errorf("diagnostics: %s", b)
	}
	return string(res.Result), nil
}
func (p *inproc) pid() int { return os.Getpid() }
func (p *inproc) close()   { p.mgr.Close() }

// ---- over MCP

type overMCP struct {
	cmd      *exec.Cmd
	sessions []*mcp.ClientSession
	mu       sync.Mutex
	dial     func() (*mcp.ClientSession, error)
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func newOverMCP(mode, bin, cfgPath string, clients int) (*overMCP, error) {
	ctx := context.Background()
	o := &overMCP{}
	cl := mcp.NewClient(&mcp.Implementation{Name: "perf", Version: "1"}, nil)
	switch mode {
	case "http":
		addr := fmt.Sprintf("127.0.0.1:%d", freePort())
		o.cmd = exec.Command(bin, "serve", "--http", addr, "--config", cfgPath)
		o.cmd.Stderr = os.Stderr
		if err := o.cmd.Start(); err != nil {
			return nil, err
		}
		for i := 0; ; i++ { // wait for the listener
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
				break
			}
			if i > 500 {
				return nil, fmt.Errorf("serve did not listen: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
		o.dial = func() (*mcp.ClientSession, error) {
			return cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", DisableStandaloneSSE: true}, nil)
		}
	case "stdio":
		o.cmd = exec.Command(bin, "serve", "--config", cfgPath)
		o.cmd.Stderr = os.Stderr
		used := false
		o.dial = func() (*mcp.ClientSession, error) {
			if used {
				return nil, fmt.Errorf("stdio serves one client")
			}
			used = true
			return cl.Connect(ctx, &mcp.CommandTransport{Command: o.cmd}, nil)
		}
	}
	for i := 0; i < clients; i++ {
		s, err := o.dial()
		if err != nil {
			return nil, err
		}
		// a client lists the tools first, as any would
		if _, err := s.ListTools(ctx, nil); err != nil {
			return nil, err
		}
		o.sessions = append(o.sessions, s)
	}
	return o, nil
}

func (o *overMCP) run(ctx context.Context, client int, code string) (string, error) {
	s := o.sessions[client%len(o.sessions)]
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{"code": code}})
	if err != nil {
		return "", err
	}
	var body struct {
		Result      json.RawMessage   `json:"result"`
		Diagnostics []json.RawMessage `json:"diagnostics"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &body); err != nil || body.Result == nil {
		// fall back to the text content
		if len(res.Content) > 0 {
			if t, ok := res.Content[0].(*mcp.TextContent); ok {
				_ = json.Unmarshal([]byte(t.Text), &body)
			}
		}
	}
	if res.IsError || len(body.Diagnostics) > 0 {
		return string(body.Result), fmt.Errorf("error result: %s", b)
	}
	return string(body.Result), nil
}
func (o *overMCP) pid() int { return o.cmd.Process.Pid }
func (o *overMCP) close() {
	for _, s := range o.sessions {
		s.Close()
	}
	if o.cmd.Process != nil {
		o.cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { o.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			o.cmd.Process.Kill()
		}
	}
}

// ---- measurements

func procStatus(pid int) map[string]int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	out := map[string]int64{}
	if err != nil {
		return out
	}
	for _, l := range strings.Split(string(b), "\n") {
		for _, k := range []string{"VmRSS", "VmHWM"} {
			if strings.HasPrefix(l, k+":") {
				f := strings.Fields(l)
				v, _ := strconv.ParseInt(f[1], 10, 64)
				out[k+"_kb"] = v
			}
		}
	}
	return out
}

type cmd struct {
	Op       string  `json:"op"`
	Scenario string  `json:"scenario"`
	N        int     `json:"n"`
	Warm     int     `json:"warm"`
	GapMs    float64 `json:"gap_ms"`
	WarmPool bool    `json:"warmpool"`
	Clients  int     `json:"clients"`
	Secs     float64 `json:"secs"`
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// defaultBin is the codemode binary next to this one (the harness's setup
// builds both into one directory), else codemode from $PATH.
func defaultBin() string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "codemode")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p
		}
	}
	return "codemode"
}

func main() {
	// esbuild runs in worker processes: this program started again
	// (internal/transpile, internal/reexec).
	if reexec.Init() {
		return
	}
	mode := flag.String("mode", "inproc", "inproc, http or stdio")
	cfgPath := flag.String("config", "", "codemode config")
	bin := flag.String("bin", defaultBin(), "codemode binary (http and stdio modes)")
	clients := flag.Int("clients", 2, "MCP client sessions (http)")
	flag.Parse()
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400) // as cmd/codemode does
	}
	out := os.NewFile(3, "results")
	if _, err := out.Stat(); err != nil { // fd 3 not open: answers on stdout
		out = os.Stdout
	}
	enc := json.NewEncoder(out)
	var r runner
	var err error
	t0 := time.Now()
	switch *mode {
	case "inproc":
		r, err = newInproc(*cfgPath)
	case "stdio":
		r, err = newOverMCP(*mode, *bin, *cfgPath, 1)
	default:
		r, err = newOverMCP(*mode, *bin, *cfgPath, *clients)
	}
	if err != nil {
		enc.Encode(map[string]any{"error": err.Error()})
		os.Exit(1)
	}
	defer r.close()
	ctx := context.Background()
	// warm: connect the upstream and check every script once
	for name, code := range scripts {
		got, err := r.run(ctx, 0, code)
		if err != nil || got != want[name] {
			enc.Encode(map[string]any{"error": fmt.Sprintf("%s: got %q err %v", name, got, err)})
			os.Exit(1)
		}
	}
	enc.Encode(map[string]any{"ready": true, "startup_ms": float64(time.Since(t0).Microseconds()) / 1000, "pid": r.pid()})
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var c cmd
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			enc.Encode(map[string]any{"error": err.Error()})
			continue
		}
		code, has := scripts[c.Scenario]
		if !has && (c.Op == "lat" || c.Op == "tput") {
			enc.Encode(map[string]any{"scenario": c.Scenario, "unsupported": true})
			continue
		}
		switch c.Op {
		case "quit":
			return
		case "rss":
			st := procStatus(r.pid())
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			enc.Encode(map[string]any{"rss": st, "self_heap_inuse_kb": ms.HeapInuse / 1024, "self_sys_kb": ms.Sys / 1024})
		case "lat":
			for i := 0; i < c.Warm; i++ {
				r.run(ctx, 0, code)
			}
			xs := make([]float64, 0, c.N)
			errs := 0
			for i := 0; i < c.N; i++ {
				if c.GapMs > 0 {
					time.Sleep(time.Duration(c.GapMs * float64(time.Millisecond)))
				}
				if c.WarmPool { // in process only: what the project's benchmarks do
					sandbox.WarmPool()
				}
				t := time.Now()
				got, err := r.run(ctx, 0, code)
				xs = append(xs, float64(time.Since(t).Nanoseconds())/1000)
				if err != nil || got != want[c.Scenario] {
					errs++
				}
			}
			enc.Encode(map[string]any{"scenario": c.Scenario, "median_us": median(xs), "n": c.N, "errors": errs, "samples_us": xs})
		case "tput":
			// c.Clients loops for c.Secs seconds each
			var n, errs atomic.Int64
			deadline := time.Now().Add(time.Duration(c.Secs * float64(time.Second)))
			var wg sync.WaitGroup
			t := time.Now()
			for k := 0; k < c.Clients; k++ {
				wg.Add(1)
				go func(k int) {
					defer wg.Done()
					for time.Now().Before(deadline) {
						got, err := r.run(ctx, k, code)
						n.Add(1)
						if err != nil || got != want[c.Scenario] {
							errs.Add(1)
						}
					}
				}(k)
			}
			wg.Wait()
			el := time.Since(t).Seconds()
			enc.Encode(map[string]any{"scenario": c.Scenario, "runs": n.Load(), "rps": float64(n.Load()) / el, "errors": errs.Load(), "rss": procStatus(r.pid())})
		}
	}
}
