package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/buildinfo"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

// invoke runs the command line in-process, as main does.
func invoke(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// everythingConfig writes a config with the real server-everything.
func everythingConfig(t *testing.T, dir string) string {
	return writeFile(t, dir, "codemode.json", fmt.Sprintf(`{"mcpServers": {"everything": {"command": %q, "args": ["stdio"]}}}`,
		testutil.NPMBin(t, "mcp-server-everything")))
}

type response struct {
	Logs        []map[string]any
	Result      any
	Diagnostics []map[string]any
	ToolTrace   []map[string]any
}

func decode(t *testing.T, stdout string) response {
	t.Helper()
	var r response
	dec := json.NewDecoder(strings.NewReader(stdout))
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("stdout is not the response JSON: %v\n%s", err, stdout)
	}
	if dec.More() {
		t.Fatalf("stdout has more than the response (logs must go to stderr):\n%s", stdout)
	}
	return r
}

func TestRunScriptFileAgainstEverything(t *testing.T) {
	dir := t.TempDir()
	cfg := everythingConfig(t, dir)
	script := writeFile(t, dir, "s.ts", `import { get_sum } from "@codemode/servers/everything";
const s: string = await get_sum({ a: 20, b: 22 });
console.log("sum", s);
globalThis.__codemode_result__ = s;`)
	// Flags after the script work too.
	code, stdout, stderr := invoke(t, "", "run", "--config", cfg, script, "--timeout-ms", "20000", "--max-tool-calls", "5")
	if code != ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	r := decode(t, stdout)
	if !strings.Contains(fmt.Sprint(r.Result), "42") || len(r.Logs) != 1 || len(r.ToolTrace) != 1 {
		t.Fatalf("response = %+v", r)
	}
}

func TestRunFromStdinAndExitStatus(t *testing.T) {
	t.Setenv("CODEMODE_CONFIG", "")
	t.Chdir(t.TempDir())
	code, stdout, _ := invoke(t, `globalThis.__codemode_result__ = [1, "<b>&"];`, "run", "-")
	if code != ExitOK || decode(t, stdout).Result == nil {
		t.Fatalf("exit %d, %s", code, stdout)
	}
	if !strings.Contains(stdout, `"<b>&"`) {
		t.Errorf("the response escapes HTML characters, which only costs readability: %s", stdout)
	}
	code, stdout, _ = invoke(t, `throw new Error("nope")`, "run", "-")
	r := decode(t, stdout)
	if code != ExitFailed || len(r.Diagnostics) == 0 || r.Diagnostics[0]["code"] != "UNCAUGHT_EXCEPTION" {
		t.Fatalf("exit %d, %s", code, stdout)
	}
	code, stdout, _ = invoke(t, `for (;;) {}`, "run", "--timeout-ms", "200", "-")
	if code != ExitFailed || decode(t, stdout).Diagnostics[0]["code"] != "SANDBOX_LIMIT" {
		t.Fatalf("exit %d, %s", code, stdout)
	}
}

func TestUsageAndConfigErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, dir, "bad.json", `{"mcpServers": {"x": {"comand": "npx"}}}`)
	script := writeFile(t, dir, "s.js", `1`)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no command", nil, []string{"Usage"}},
		{"unknown command", []string{"frobnicate"}, []string{"unknown command", "frobnicate"}},
		{"run without script", []string{"run"}, []string{"exactly one SCRIPT"}},
		{"missing script file", []string{"run", filepath.Join(dir, "nope.js")}, []string{"reading the script"}},
		{"empty stdin", []string{"run", "-"}, []string{"stdin is empty", "| codemode run -"}},
		{"empty script file", []string{"run", writeFile(t, dir, "empty.js", " \n")}, []string{"empty.js is empty"}},
		{"bad flag", []string{"run", "--timeout", "5", script}, []string{"flag provided but not defined", "did you mean --timeout-ms?"}},
		{"misspelt flag", []string{"run", "--timout-ms", "5", script}, []string{"did you mean --timeout-ms?"}},
		{"unknown flag", []string{"history", "list", "--frobnicate"}, []string{"flag provided but not defined: -frobnicate\n"}},
		{"negative limit", []string{"run", "--timeout-ms", "-5", script}, []string{"--timeout-ms -5", "positive"}},
		{"bad config", []string{"run", "--config", bad, script}, []string{"bad.json", "mcpServers.x.comand", `did you mean "command"`}},
		{"missing config", []string{"run", "--config", filepath.Join(dir, "none.json"), script}, []string{"none.json", "--config"}},
		{"bad log level", []string{"run", "--log-level", "loud", script}, []string{"--log-level"}},
		{"serve on all interfaces without token", []string{"serve", "--http", "0.0.0.0:0"}, []string{"non-loopback", "--auth-token"}},
		{"wildcard origin", []string{"serve", "--http", "127.0.0.1:0", "--allowed-origin", "*"}, []string{`--allowed-origin "*"`, "scheme://host[:port]"}},
		{"wildcard subdomain origin", []string{"serve", "--http", "127.0.0.1:0", "--allowed-origin", "https://*.example.com"}, []string{"no wildcard"}},
		{"origin with a path", []string{"serve", "--http", "127.0.0.1:0", "--allowed-origin", "https://app.example.com/app"}, []string{"no wildcard or path"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CODEMODE_AUTH_TOKEN", "")
			code, _, stderr := invoke(t, "", tc.args...)
			if code != ExitUsage {
				t.Fatalf("exit %d, want %d; stderr: %s", code, ExitUsage, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestTypesOutDir(t *testing.T) {
	dir := t.TempDir()
	cfg := everythingConfig(t, dir)
	out := filepath.Join(dir, "types")
	code, _, stderr := invoke(t, "", "types", "--config", cfg, "--out", out)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for name, want := range map[string]string{
		"everything.d.ts": `declare module "@codemode/servers/everything"`,
		"codemode.d.ts":   `declare module "@codemode/discovery"`,
	} {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("%s: %v, lacks %q", name, err, want)
		}
	}
	// Without --out the same files go to stdout.
	code, stdout, _ := invoke(t, "", "types", "--config", cfg)
	if code != ExitOK || !strings.Contains(stdout, "get_sum") || !strings.Contains(stdout, "==== codemode.d.ts ====") {
		t.Fatalf("exit %d:\n%.500s", code, stdout)
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := invoke(t, "", "version")
	if code != ExitOK || stdout != "codemode "+buildinfo.Describe()+"\n" || !strings.Contains(stdout, runtime.Version()) {
		t.Fatalf("exit %d: %q", code, stdout)
	}
}

// A binary built from a git checkout says which commit it was built from:
// `codemode version` carries the VCS revision the toolchain stamped.
func TestVersionNamesTheRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary from a clone")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	git := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("git", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	// The source as it is, committed to a fresh repository: the toolchain
	// stamps VCS information only where .git is a directory, which a
	// worktree's is not, and only a clean tree has a plain revision.
	files := strings.Split(strings.TrimRight(git("-C", testutil.Root(), "ls-files", "-z", "--cached", "--others", "--exclude-standard"), "\x00"), "\x00")
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(testutil.Root(), f))
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted, not yet committed
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(src, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("-C", src, "init", "--quiet")
	git("-C", src, "add", ".")
	git("-C", src, "-c", "user.name=test", "-c", "user.email=test@example.invalid", "commit", "--quiet", "-m", "test")
	rev := git("-C", src, "rev-parse", "HEAD")
	bin := filepath.Join(dir, "codemode")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/codemode")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	// "codemode v0.0.0-<time>-<rev12> (revision <rev> of <time>; go1.x os/arch)"
	if got := string(out); !strings.HasPrefix(got, "codemode v0.0.0-") || !strings.Contains(got, rev[:12]+" (revision "+rev+" of ") || strings.Contains(got, "uncommitted") {
		t.Errorf("codemode version = %q; want the revision %s", got, rev)
	}
}

// A .js file is JavaScript: `f < T > (x)` is two comparisons there, a
// generic call in TypeScript; a syntax error is reported against script.js.
func TestRunLanguageFromExtension(t *testing.T) {
	t.Setenv("CODEMODE_CONFIG", "")
	dir := t.TempDir()
	t.Chdir(dir)
	js := writeFile(t, dir, "amb.js", `const f = 1, T = 2, x = 3; globalThis.__codemode_result__ = f < T > (x);`)
	code, stdout, stderr := invoke(t, "", "run", js)
	if r := decode(t, stdout); code != ExitOK || r.Result != false {
		t.Fatalf("exit %d, result %v: %s %s", code, r.Result, stdout, stderr)
	}
	bad := writeFile(t, dir, "bad.js", "const a = 1;\nconst = 2;")
	_, stdout, _ = invoke(t, "", "run", bad)
	if r := decode(t, stdout); len(r.Diagnostics) == 0 || r.Diagnostics[0]["path"] != "script.js:2:7" {
		t.Fatalf("diagnostics %v", r.Diagnostics)
	}
}

// codemode run --dry-run: the read-only call runs, the other is listed in
// plan and returns null; with approvals configured and no client to ask, a
// run without --dry-run stops with APPROVAL_REQUIRED.
func TestRunDryRunAndApprovalRequired(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, dir, "codemode.json", fmt.Sprintf(`{"mcpServers": {"everything": {"command": %q, "args": ["stdio"]}}, "codemode": {"approval": "writes"}}`,
		testutil.NPMBin(t, "mcp-server-everything")))
	script := writeFile(t, dir, "s.ts", `import { echo, toggle_simulated_logging } from "@codemode/servers/everything";
const e = await echo({ message: "hi" });
const t = await toggle_simulated_logging({});
globalThis.__codemode_result__ = { e, t };`)
	code, stdout, stderr := invoke(t, "", "run", "--config", cfg, "--dry-run", script)
	if code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var r struct {
		Result any
		Plan   []struct{ ServerID, ToolName string }
	}
	json.Unmarshal([]byte(stdout), &r)
	if b, _ := json.Marshal(r.Result); string(b) != `{"e":"Echo: hi","t":null}` || len(r.Plan) != 1 || r.Plan[0].ToolName != "toggle-simulated-logging" {
		t.Errorf("dry run: %s", stdout)
	}
	code, stdout, _ = invoke(t, "", "run", "--config", cfg, script)
	// The diagnostic speaks to the user at the terminal: no client, and
	// --dry-run as the way to see the calls.
	if code != ExitFailed || !strings.Contains(stdout, "APPROVAL_REQUIRED") || !strings.Contains(stdout, "no MCP client to ask (codemode run)") || !strings.Contains(stdout, "--dry-run") {
		t.Errorf("without --dry-run: exit %d\n%s", code, stdout)
	}
}
