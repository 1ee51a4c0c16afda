package serve_test

import (
	"bufio"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// The real binary, served over HTTP with a token (surfaces run and
// thoughtbox, and the replay step), driven by the
// TypeScript SDK client: /metrics counts its runs exactly (no token
// needed), /healthz and /readyz answer, and /ui lists the runs (with the
// token; without it, the page that asks for it).
func TestObserveE2E(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, upstreams{"everything": everythingEntry(t)}, map[string]any{"surfaces": []string{"run", "thoughtbox"}, "builtins": []string{"thoughtbox"}})
	p := startProc(t, baseEnv("XDG_STATE_HOME="+t.TempDir()), t.TempDir(), codemodeBin(t), "serve", "--config", cfg, "--http", "127.0.0.1:0", "--auth-token", "tok-e2e-0123456789")
	m, err := p.waitLine(urlLine)
	if err != nil {
		t.Fatalf("codemode serve --http did not start: %v", err)
	}
	mcpURL := m[1]
	base := strings.TrimSuffix(mcpURL, "/mcp")
	auth := map[string]string{"Authorization": "Bearer tok-e2e-0123456789"}
	runTS(t, httpConn(mcpURL, auth),
		runStep(`import { get_sum, echo } from "@codemode/servers/everything";
const [a, b] = await Promise.all([get_sum({ a: 1, b: 2 }), echo({ message: "x" })]);
globalThis.__codemode_result__ = await get_sum({ a: 3, b: 4 });`),
		runStep(`globalThis.__codemode_result__ = 1`),
		runStep(`throw new Error("no")`),
		callStep("thoughtbox_execute", map[string]any{"code": `async () => 40 + 2`}),
	)
	// A replay step is a run too, of surface "step".
	if status, body := postStep(t, base+"/v1/code/step", stepRequest, auth); status != 200 {
		t.Fatalf("step: %d %s", status, body)
	}
	get := func(path string, header map[string]string) (int, string) {
		req, _ := http.NewRequest("GET", base+path, nil)
		for k, v := range header {
			req.Header.Set(k, v)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	status, body := get("/metrics", nil)
	if status != 200 {
		t.Fatalf("/metrics: %d %s", status, body)
	}
	for _, want := range []string{
		`codemode_runs_total{outcome="ok",surface="run"} 2`,
		`codemode_runs_total{outcome="UNCAUGHT_EXCEPTION",surface="run"} 1`,
		`codemode_tool_calls_total{outcome="ok",server="everything",tool="get-sum"} 2`,
		`codemode_tool_calls_total{outcome="ok",server="everything",tool="echo"} 1`,
		`codemode_upstream_up{server="everything"} 1`,
		`codemode_history_dropped_total 0`,
		`codemode_run_duration_seconds_count{surface="step"} 1`,
		`codemode_runs_total{outcome="ok",surface="thoughtbox"} 1`,
		`go_goroutines `,
	} {
		if !hasLine(body, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(body, "codemode_"))
		}
	}
	if status, body := get("/healthz", nil); status != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %s", status, body)
	}
	if status, body := get("/readyz", nil); status != 200 || !strings.Contains(body, `"ready":true`) {
		t.Errorf("/readyz: %d %s", status, body)
	}
	if status, body := get("/ui/", nil); status != 401 || !strings.Contains(body, `<label for="token">Token</label>`) {
		t.Errorf("/ui/ without the token: %d", status)
	}
	// The runs are written off the answers' path: the page's live events
	// say when the third one is in.
	req, _ := http.NewRequest("GET", base+"/ui/events", nil)
	req.Header.Set("Authorization", auth["Authorization"])
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(res.Body)
	for len(seen) < 5 && sc.Scan() {
		if id, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
			seen[id] = true
		}
	}
	res.Body.Close()
	status, body = get("/ui/", auth)
	rows := regexp.MustCompile(`<tr data-run="[^"]+" class="(ok|fail)"`).FindAllString(body, -1)
	if status != 200 || len(rows) != 5 || !strings.Contains(body, "UNCAUGHT_EXCEPTION") || !strings.Contains(body, "<td>step</td>") {
		t.Errorf("/ui/: %d, %d rows\n%s", status, len(rows), body)
	}
}
