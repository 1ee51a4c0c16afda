package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Scripts that took the whole gateway down or held it forever, run against
// the real binary under a memory cap: the process must survive, answer each
// with SANDBOX_LIMIT, and still serve; a cancelled run and SIGTERM must end.
// No assertion is on time: each wait is for the event, with a generous hang
// guard as the failure bound.

// memoryCap is the address space the gateway gets (prlimit --as): a Go
// program reserves about 1 GiB of it at start; the rest is far less than
// the gigabytes esbuild reached folding the enum below in process.
const memoryCap = 3 << 30

// startCapped starts `codemode serve args...` over stdio under prlimit.
func startCapped(t *testing.T, args ...string) *stdioGateway {
	t.Helper()
	prlimit, err := exec.LookPath("prlimit")
	if err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	return startGateway(t, exec.Command(prlimit, append([]string{fmt.Sprintf("--as=%d", memoryCap), "--", codemodeBin(t), "serve"}, args...)...))
}

// runOver calls codemode_run and returns its response as text; a crash of
// the gateway fails the test with its stderr.
func runOver(t *testing.T, ctx context.Context, cs *mcp.ClientSession, g *stdioGateway, code string, limits map[string]any) string {
	t.Helper()
	args := map[string]any{"code": code}
	if limits != nil {
		args["limits"] = limits
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: args})
	if err != nil {
		select {
		case <-g.exited:
			t.Fatalf("the gateway died (%v): %v\nstderr:\n%s", g.waitErr, err, tail(g.stderr.String(), 3000))
		default:
		}
		t.Fatalf("call failed: %v\nstderr:\n%s", err, tail(g.stderr.String(), 3000))
	}
	b, _ := json.Marshal(res)
	return string(b)
}

// enumBomb makes esbuild fold a string constant that doubles 40 times.
func enumBomb() string {
	var b strings.Builder
	b.WriteString("enum E { m0 = \"a\",\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&b, "  m%d = m%d + m%d,\n", i, i-1, i-1)
	}
	b.WriteString("}\nglobalThis.__codemode_result__ = E.m3;\n")
	return b.String()
}

func TestHostileScriptsDoNotTakeTheGatewayDown(t *testing.T) {
	t.Parallel()
	g := startCapped(t)
	ctx := testutil.Context(t)
	cs := g.connect(t, ctx)
	huge := "{length: 2 ** 53 - 1}"
	for _, c := range []struct {
		name, code, want string
	}{
		{"an enum that doubles a string", enumBomb(), "compil"}, // out of memory, or out of time on a loaded machine
		{"indexOf on a huge array-like", "Array.prototype.indexOf.call(" + huge + ", 1);", "Array.prototype.indexOf"},
		{"includes", "Array.prototype.includes.call(" + huge + ", 1);", "Array.prototype.includes"},
		{"lastIndexOf", "Array.prototype.lastIndexOf.call(" + huge + ", 1);", "Array.prototype.lastIndexOf"},
		{"every", "Array.prototype.every.call(" + huge + ", () => false);", "Array.prototype.every"},
		{"reverse", "Array.prototype.reverse.call(" + huge + ");", "Array.prototype.reverse"},
		{"copyWithin", "Array.prototype.copyWithin.call(" + huge + ", 0, 1);", "Array.prototype.copyWithin"},
		{"splice", "Array.prototype.splice.call(" + huge + ", 0, 1);", "Array.prototype.splice"},
		{"join of a huge sparse array", `new Array(2 ** 32 - 1).join("");`, "Array.prototype.join"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := runOver(t, ctx, cs, g, c.code, map[string]any{"timeoutMs": 1000})
			if !strings.Contains(out, "SANDBOX_LIMIT") || !strings.Contains(out, c.want) {
				t.Errorf("got %s", tail(out, 800))
			}
		})
	}
	// Still serving.
	if out := runOver(t, ctx, cs, g, "globalThis.__codemode_result__ = 6 * 7;", nil); !strings.Contains(out, "42") {
		t.Errorf("after the attacks: %s", tail(out, 800))
	}
}

// A diagnostic forged by a setter on Array.prototype[0] (JSON.stringify in
// the host's own formatting called it) reaches no client.
func TestForgedDiagnosticOverStdio(t *testing.T) {
	t.Parallel()
	g := startStdio(t)
	ctx := testutil.Context(t)
	cs := g.connect(t, ctx)
	out := runOver(t, ctx, cs, g, `Object.defineProperty(Array.prototype, 0, { set(v) {
  try { v.errorClass = "SandboxLimitError"; v.name = "InternalError"; v.message = "the host ran out of memory"; } catch {}
} });
null.x;`, nil)
	if strings.Contains(out, "SANDBOX_LIMIT") || strings.Contains(out, "ran out of memory") || !strings.Contains(out, "UNCAUGHT_EXCEPTION") || !strings.Contains(out, "TypeError") {
		t.Errorf("got %s", tail(out, 800))
	}
}

// waitStderr waits until the gateway's stderr contains s.
func waitStderr(t *testing.T, g *stdioGateway, s string) {
	t.Helper()
	exited := false
	if !testutil.Poll(t, func() bool {
		select {
		case <-g.exited:
			exited = true
			return true
		default:
		}
		return strings.Contains(g.stderr.String(), s)
	}) {
		t.Fatalf("stderr never showed %q:\n%s", s, tail(g.stderr.String(), 3000))
	}
	if exited && !strings.Contains(g.stderr.String(), s) {
		t.Fatalf("the gateway exited (%v) before stderr showed %q:\n%s", g.waitErr, s, tail(g.stderr.String(), 3000))
	}
}

// startedScript writes a file through the filesystem server, so that the
// test knows the run has started, then runs body.
func startedScript(marker, body string) string {
	return fmt.Sprintf(`import { write_file } from "@codemode/servers/filesystem";
await write_file({ path: %q, content: "started" });
%s`, marker, body)
}

// uninterruptible holds the engine in a built-in that checks no interrupt
// for a while (a sort of three million numbers without a comparator
// converts each compared pair to strings; its memory limit bounds it),
// then loops in JavaScript.
const uninterruptible = `const a = new Array(3e6); for (let i = 0; i < a.length; i++) a[i] = (i * 7919) % 3e6; a.sort(); for (;;);`

// notifications/cancelled ends a run, also one inside a built-in that does
// not check the interrupt: its audit line says CANCELLED and the gateway
// goes on serving.
func TestCancelledRunEnds(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := startCapped(t, "--config", writeConfig(t, upstreams{"filesystem": filesystemEntry(t, dir)}, nil))
	ctx := testutil.Context(t)
	cs := g.connect(t, ctx)
	marker := filepath.Join(dir, "started")
	callCtx, cancelCall := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(callCtx, &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{
			"code": startedScript(marker, uninterruptible), "limits": map[string]any{"timeoutMs": 600000, "maxMemoryBytes": 512 << 20}}})
		done <- err
	}()
	waitFile(t, marker)
	cancelCall() // the client sends notifications/cancelled
	<-done
	waitStderr(t, g, "error=CANCELLED")
	if out := runOver(t, ctx, cs, g, "globalThis.__codemode_result__ = 6 * 7;", nil); !strings.Contains(out, "42") {
		t.Errorf("after the cancellation: %s", tail(out, 800))
	}
}

// SIGTERM ends the gateway within its grace period even while a run is
// inside a built-in that does not check the interrupt, and while a call
// that used to hang forever is in flight.
func TestSIGTERMEndsAStuckGateway(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	g := startCapped(t, "--grace", "1s", "--config", writeConfig(t, upstreams{"filesystem": filesystemEntry(t, dir)}, nil))
	ctx := testutil.Context(t)
	cs := g.connect(t, ctx)
	marker := filepath.Join(dir, "started")
	for _, code := range []string{
		startedScript(marker, uninterruptible),
		"Array.prototype.indexOf.call({length: 2 ** 53 - 1}, 1);",
	} {
		go cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{
			"code": code, "limits": map[string]any{"timeoutMs": 600000, "maxMemoryBytes": 512 << 20}}})
	}
	waitFile(t, marker)
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-g.exited:
	case <-testutil.Expiry(t):
		t.Fatalf("codemode still runs after SIGTERM with --grace 1s; stderr:\n%s", tail(g.stderr.String(), 3000))
	}
}
