package serve_test

// Admission under load, through the real binary: 200 runs that each hold
// 30 MB, sent at once over stdio and over Streamable HTTP, are all answered
// (a result, or the SANDBOX_LIMIT diagnostic of a run that was not
// admitted), and the process stays under its configured memory budget.
//
// The memory is the kernel's record of the process's peak resident set
// (VmHWM in /proc/<pid>/status), read once every answer is in: nothing is
// sampled, so a slow machine changes how long the test takes, not what it
// measures. Without admission the runs would hold 200 × 30 MB = 6 GB.
//
// The two tests are not parallel: they keep both cores busy for a few
// seconds, and the package's other tests (which run after them) include
// some that wait for timers.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	loadRuns   = 200
	loadBudget = 512 << 20
	// loadScript holds 30 MB (a one-byte-per-character string) until the
	// run ends.
	loadScript = `const s = "x".repeat(30_000_000); globalThis.__codemode_result__ = s.length;`
)

// loadConfig admits at most 8 runs at once, within a 512 MiB budget (8 ×
// the default 64 MiB limit), and queues up to 100.
func loadConfig(t *testing.T) string {
	return writeConfig(t, upstreams{}, map[string]any{
		"maxConcurrentRuns": 8, "maxConcurrentRunsPerSession": 8, "maxQueuedRuns": 100, "memoryBudgetBytes": loadBudget,
	})
}

func TestLoadStdio(t *testing.T) {
	g := startStdio(t, "--config", loadConfig(t))
	ctx := testutil.Context(t)
	cs := g.connect(t, ctx)
	checkLoad(t, g.cmd.Process.Pid, loadAll(t, ctx, []*mcp.ClientSession{cs}), g.stderr.String)
}

func TestLoadHTTP(t *testing.T) {
	h := startHTTP(t, loadConfig(t))
	ctx := testutil.Context(t)
	// Four clients, fifty runs each.
	var sessions []*mcp.ClientSession
	for range 4 {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "load", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.url}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, tail(h.stderr.String(), 4000))
		}
		t.Cleanup(func() { cs.Close() })
		sessions = append(sessions, cs)
	}
	checkLoad(t, h.cmd.Process.Pid, loadAll(t, ctx, sessions), h.stderr.String)
}

// loadAll sends loadRuns runs at once, spread over sessions, and returns
// each one's answer: the §3.3 response, or the protocol error.
func loadAll(t *testing.T, ctx context.Context, sessions []*mcp.ClientSession) []loadAnswer {
	answers := make([]loadAnswer, loadRuns)
	var wg sync.WaitGroup
	for i := range loadRuns {
		cs := sessions[i%len(sessions)]
		wg.Go(func() {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{"code": loadScript}})
			if err != nil {
				answers[i].err = err
				return
			}
			answers[i].resp, answers[i].err = runResponseOf(res)
		})
	}
	wg.Wait()
	return answers
}

type loadAnswer struct {
	resp runResponse
	err  error
}

// runResponseOf decodes the §3.3 response of a run tool's result.
func runResponseOf(res *mcp.CallToolResult) (runResponse, error) {
	var r runResponse
	if len(res.Content) == 0 {
		return r, fmt.Errorf("no content")
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		return r, fmt.Errorf("content[0] is %T", res.Content[0])
	}
	if err := json.Unmarshal([]byte(tc.Text), &r); err != nil {
		return r, fmt.Errorf("content[0] is not the response JSON: %v: %.200s", err, tc.Text)
	}
	return r, nil
}

// checkLoad checks that every run was answered, with its result or a
// refusal, and that the gateway's peak resident set stayed within its
// budget.
func checkLoad(t *testing.T, pid int, answers []loadAnswer, stderr func() string) {
	t.Helper()
	ok, refused := 0, 0
	for i, a := range answers {
		if a.err != nil {
			t.Errorf("run %d: no answer: %v", i, a.err)
			continue
		}
		d := a.resp.errorDiag()
		switch {
		case d == nil && string(a.resp.Result) == "30000000":
			ok++
		case d != nil && d.Code == "SANDBOX_LIMIT" && d.Limit == "concurrency" && d.ErrorClass == "SandboxLimitError" && d.Hint != "":
			refused++
		default:
			t.Errorf("run %d: neither the result nor a clear admission error: result %s, diagnostics %+v", i, a.resp.Result, a.resp.diags())
		}
	}
	if ok == 0 {
		t.Errorf("no run succeeded (%d refused)", refused)
	}
	t.Logf("%d runs answered with their result, %d refused at admission", ok, refused)
	if runtime.GOOS != "linux" {
		return
	}
	peak := peakRSS(t, pid)
	t.Logf("peak resident set %d MiB, budget %d MiB", peak>>20, loadBudget>>20)
	if peak > loadBudget {
		t.Errorf("the gateway's peak resident set was %d MiB, more than its memory budget of %d MiB\n%s", peak>>20, loadBudget>>20, tail(stderr(), 2000))
	}
}

// peakRSS reads the peak resident set size of pid, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}
