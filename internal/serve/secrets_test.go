package serve_test

import (
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/redact"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

const leakySecret = "sk-leaky-0123456789abcdef"

// A server whose descriptions, instructions, schemas, resources, prompts,
// results and errors all carry a configured secret: nothing of it reaches
// the model on any surface, not in tools/list, declarations, search results
// or run responses; and a script that transforms what it receives (hex,
// reversed) cannot leak it either, because it never receives it.
func TestNoSecretOnAnySurface(t *testing.T) {
	t.Parallel()
	cfg := testutil.Config(config.Server{Name: "leaky", Transport: config.Stdio, Command: "in-memory", Secrets: []string{leakySecret}})
	cfg.Serve.Surfaces = []string{"run", "search-execute", "files", "emceepee"}
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"leaky": testutil.LeakyServer(leakySecret)}),
		Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { mgr.Close() })
	srv := serve.New(run.New(cfg, catalog.New(mgr), mgr, nil), mgr, &serve.Options{Logger: slog.New(slog.DiscardHandler)})
	g := &inproc{srv: srv, cs: connectInMemory(t, srv, "secrets")}

	forbidden := []string{leakySecret, "0123456789abcdef", hex.EncodeToString([]byte(leakySecret)), reverse(leakySecret)}
	check := func(what string, out []byte) {
		t.Helper()
		for _, f := range forbidden {
			if strings.Contains(string(out), f) {
				t.Errorf("%s: %q reached the model:\n%s", what, f, out)
			}
		}
	}
	list, err := g.cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(list)
	check("tools/list", b)
	init, _ := json.Marshal(g.cs.InitializeResult())
	check("initialize", init)

	check("listToolFiles", g.call(t, "listToolFiles", map[string]any{}))
	for _, f := range []string{"servers/leaky.d.ts", "codemode.d.ts"} {
		check("readToolFile "+f, g.call(t, "readToolFile", map[string]any{"fileName": f}))
	}
	for _, typ := range []string{"all", "tools", "resources", "prompts", "servers"} {
		check("codemode_search "+typ, g.call(t, "codemode_search", map[string]any{"query": "key|leak|.", "type": typ, "includeSchemas": true}))
	}
	check("search", g.call(t, "search", map[string]any{"code": "async (catalog) => catalog"}))
	const transforms = `
const hex = (s) => Array.from(String(s), (c) => c.charCodeAt(0).toString(16).padStart(2, "0")).join("");
const rev = (s) => String(s).split("").reverse().join("");
const b64 = (s) => { // base64 decoding, as a script would write it
  const abc = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  let bits = 0, n = 0, out = "";
  for (const c of String(s).replace(/=+$/, "")) {
    bits = (bits << 6) | abc.indexOf(c); n += 6;
    if (n >= 8) { n -= 8; out += String.fromCharCode((bits >> n) & 255); }
  }
  return out;
};
const decoded = (v) => JSON.stringify(v, (k, x) => (k === "data" || k === "blob") && typeof x === "string" ? b64(x) : x);
const leaks = (v) => { const s = decoded(v); return { s, hex: hex(s), rev: rev(s) }; };`
	check("execute", g.call(t, "execute", map[string]any{"code": `async () => {` + transforms + `
const r = await leaky.leak({});
const bin = leaks(await leaky.binary({}));
let fail, reject;
try { await leaky.fail({}); } catch (e) { fail = leaks([e.message, e.result]); }
try { await leaky.reject({}); } catch (e) { reject = leaks(e.message); }
return { r: leaks(r), bin, fail, reject };
}`}))
	check("codemode_execute", g.call(t, "codemode_execute", map[string]any{"code": transforms + `
const out = {};
for (const [k, f] of Object.entries({
  servers: () => mcp.listServers(), tools: () => mcp.listTools(), resources: () => mcp.listResources(),
  templates: () => mcp.listResourceTemplates(), prompts: () => mcp.listPrompts(),
  read: () => mcp.readResource("leaky", "leak://key"), prompt: () => mcp.getPrompt("leaky", "login", {}),
  leak: () => mcp.callTool("leaky", "leak", {}), fail: () => mcp.callTool("leaky", "fail", {}),
  binary: () => mcp.callTool("leaky", "binary", {}),
  reject: () => mcp.callTool("leaky", "reject", {}),
})) {
  try { out[k] = leaks(await f()); } catch (e) { out[k] = leaks(e.message); }
}
mcp.log(out);
return out;`}))
	check("codemode_run", g.call(t, "codemode_run", map[string]any{"code": transforms + `
import * as d from "@codemode/discovery";
import * as leaky from "@codemode/servers/leaky";
const out = { meta: leaks(leaky.__meta__) };
for (const [k, f] of Object.entries({
  servers: () => d.listServers(), tools: () => d.listTools("leaky"), tool: () => d.getTool("leaky", "leak"),
  search: () => d.searchTools("key"), leak: () => leaky.leak({}), fail: () => leaky.fail({}), reject: () => leaky.reject({}),
  binary: () => leaky.binary({}),
})) {
  try { out[k] = leaks(await f()); } catch (e) { out[k] = leaks([e.message, e.hint, e.result]); }
}
console.log(out);
globalThis.__codemode_result__ = out;`}))
	// And when the script fails with it in its message.
	check("codemode_run failing", g.call(t, "codemode_run", map[string]any{"code": `
import * as leaky from "@codemode/servers/leaky";
await leaky.fail({});`}))
	if !strings.Contains(string(g.call(t, "codemode_run", map[string]any{"code": `import * as leaky from "@codemode/servers/leaky";
globalThis.__codemode_result__ = await leaky.leak({});`})), redact.Marker) {
		t.Error("the leak tool's result is not marked as redacted")
	}
}

func reverse(s string) string {
	r := []rune(s)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return string(r)
}

// End to end, with the real binary and the reference server's get-env tool:
// the gateway's shell holds an AWS key and a GitHub token that no config
// entry names; the server does not inherit them, so printing its
// environment shows neither.
func TestGetEnvShowsNoGatewaySecret(t *testing.T) {
	t.Parallel()
	const awsKey, ghToken = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY", "ghp_gatewayShellToken0123456789"
	cfg := writeConfig(t, upstreams{"everything": everythingEntry(t)}, nil)
	cmd := exec.Command(codemodeBin(t), "serve", "--config", cfg)
	cmd.Env = baseEnv("AWS_SECRET_ACCESS_KEY="+awsKey, "GITHUB_TOKEN="+ghToken)
	cmd.Dir = t.TempDir()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd.WaitDelay = 2 * time.Second
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ctx := testutil.Context(t)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "codemode_run", Arguments: map[string]any{"code": `import { get_env } from "@codemode/servers/everything";
globalThis.__codemode_result__ = await get_env({});`}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	out := string(b)
	if strings.Contains(out, awsKey) || strings.Contains(out, ghToken) || strings.Contains(out, "AWS_SECRET_ACCESS_KEY") || strings.Contains(out, "GITHUB_TOKEN") {
		t.Fatalf("the gateway's environment reached the model: %s", out)
	}
	if !strings.Contains(out, "PATH") {
		t.Fatalf("get-env did not run: %s\n%s", out, stderr.String())
	}
}
