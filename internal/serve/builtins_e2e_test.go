package serve_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/builtin/builtintest"
)

// The built-in servers through real clients and real processes.

// TestThoughtboxSurfaceSeedExamples runs the seed's examples verbatim on
// the thoughtbox surface through the TypeScript SDK client, over stdio,
// then lists the session they recorded from a restarted gateway over HTTP.
func TestThoughtboxSurfaceSeedExamples(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	cfg := writeConfig(t, nil, map[string]any{"surfaces": []string{"thoughtbox"}, "builtins": []string{"thoughtbox", "store"}})
	conn := map[string]any{"transport": "stdio", "command": codemodeBin(t), "args": []string{"serve", "--config", cfg},
		"env": map[string]string{"XDG_STATE_HOME": state}}
	steps := []step{listStep()}
	examples := append(append([]builtintest.Example{}, builtintest.SearchExamples...), builtintest.SeedExamples...)
	for _, ex := range examples {
		steps = append(steps, callStep(ex.Tool, map[string]any{"code": ex.Code}))
	}
	c := startTS(t, conn, steps...)
	out := c.output(t)
	l := decode[toolList](t, out.Results[0])
	if names := strings.Join(l.names(), ","); names != "thoughtbox_execute,thoughtbox_search" && names != "thoughtbox_search,thoughtbox_execute" {
		t.Fatalf("tools = %s", names)
	}
	for _, tool := range l.Tools {
		if tool.Name == "thoughtbox_search" && !strings.Contains(tool.Description, "Read-only. 10-second timeout") {
			t.Errorf("thoughtbox_search description: %s", tool.Description)
		}
		if tool.Name == "thoughtbox_execute" && !strings.Contains(tool.Description, "30-second timeout") {
			t.Errorf("thoughtbox_execute description: %s", tool.Description)
		}
	}
	for i, ex := range examples {
		raw := out.Results[i+1]
		_, resp := asRun(t, raw)
		text := string(raw)
		if ex.Fails {
			if resp.errorDiag() == nil || !strings.Contains(resp.errorDiag().Message, ex.Want) {
				t.Errorf("%s: want an error with %q, got %s", ex.Name, ex.Want, text)
			}
			continue
		}
		// The result as JSON: the answer carries it inside a text block.
		if resp.errorDiag() != nil || !strings.Contains(string(resp.Result), ex.Want) {
			t.Errorf("%s: want %q in the result, got %s", ex.Name, ex.Want, text)
		}
	}

	// A new gateway on the same data, over HTTP: the session is listed.
	p := startProc(t, baseEnv("XDG_STATE_HOME="+state), t.TempDir(), codemodeBin(t), "serve", "--config", cfg, "--http", "127.0.0.1:0")
	m, err := p.waitLine(urlLine)
	if err != nil {
		t.Fatal(err)
	}
	got := runTS(t, httpConn(m[1], nil), callStep("thoughtbox_execute", map[string]any{"code": `async () => {
const { sessions } = await tb.session.list({ limit: 5 });
const s = await tb.session.get(sessions[0].id);
return { n: sessions.length, types: s.thoughts.map((t) => t.thoughtType), entities: (await tb.knowledge.stats()).entities };
}`}))
	if r := okRun(t, got[0]); r != `{"n":1,"types":["reasoning","decision_frame"],"entities":1}` {
		t.Errorf("after a restart: %s", r)
	}
}

// TestNamedClientsNamespaces: two clients with their own tokens
// (codemode.clients) never see each other's keys or sessions; a third
// shares a namespace with the first, as configured.
func TestNamedClientsNamespaces(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, nil, map[string]any{"builtins": []string{"thoughtbox", "store"}, "clients": map[string]any{
		"alice": map[string]any{"token": "${ALICE_TOKEN}"},
		"bob":   map[string]any{"token": "bob-token-0123456789"},
		"carol": map[string]any{"token": "carol-token-0123456789", "namespace": "alice"},
	}})
	p := startProc(t, baseEnv("XDG_STATE_HOME="+t.TempDir(), "ALICE_TOKEN=alice-token-0123456789"), t.TempDir(), codemodeBin(t), "serve", "--config", cfg, "--http", "127.0.0.1:0")
	m, err := p.waitLine(urlLine)
	if err != nil {
		t.Fatal(err)
	}
	as := func(token, code string) string {
		t.Helper()
		got := runTS(t, httpConn(m[1], map[string]string{"Authorization": "Bearer " + token}), runStep(code))
		return okRun(t, got[0])
	}
	as("alice-token-0123456789", `import { set } from "@codemode/servers/store"; import { thought } from "@codemode/servers/thoughtbox";
await set({ key: "k", value: "alice's" }); await thought({ thought: "alice thinks", thoughtType: "reasoning", nextThoughtNeeded: false });
globalThis.__codemode_result__ = 1;`)
	read := `import { get } from "@codemode/servers/store"; import { session_list } from "@codemode/servers/thoughtbox";
globalThis.__codemode_result__ = { k: (await get({ key: "k" })).found, sessions: (await session_list({})).total };`
	if got := as("bob-token-0123456789", read); got != `{"k":false,"sessions":0}` {
		t.Errorf("bob sees: %s", got)
	}
	if got := as("carol-token-0123456789", read); got != `{"k":true,"sessions":1}` {
		t.Errorf("carol (namespace alice) sees: %s", got)
	}
	// A wrong token is refused.
	req, _ := http.NewRequest("POST", m[1], strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	req.Header.Set("Authorization", "Bearer wrong-token-0123456789")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token: status %d", res.StatusCode)
	}
}

// TestBrokenStoreKeepsServing: with a corrupt database file the gateway
// still serves every run that does not use the store; a run that does
// gets an error naming the file and the fix; moving the file aside, as the
// fix says, is enough.
func TestBrokenStoreKeepsServing(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	db := filepath.Join(dataDir, "codemode.db")
	if err := os.WriteFile(db, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, upstreams{"everything": everythingEntry(t)}, map[string]any{"builtins": []string{"thoughtbox", "store"}})
	conn := map[string]any{"transport": "stdio", "command": codemodeBin(t), "args": []string{"serve", "--config", cfg, "--data-dir", dataDir}}
	c := startTS(t, conn,
		runStep(`import { get_sum } from "@codemode/servers/everything"; globalThis.__codemode_result__ = await get_sum({ a: 2, b: 40 });`),
		runStep(`import { get } from "@codemode/servers/store"; globalThis.__codemode_result__ = await get({ key: "k" });`),
		runStep(`globalThis.__codemode_result__ = 6 * 7;`),
	)
	out := c.output(t)
	if r := okRun(t, out.Results[0]); !strings.Contains(r, "42") {
		t.Errorf("an upstream call with a broken store: %s", r)
	}
	_, resp := asRun(t, out.Results[1])
	if d := resp.errorDiag(); d == nil || !strings.Contains(d.Message, db) || !strings.Contains(d.Message, "fix:") || !strings.Contains(d.Message, "not a SQLite database") {
		b, _ := json.Marshal(resp)
		t.Errorf("a store call with a corrupt file: %s", b)
	}
	if r := okRun(t, out.Results[2]); r != "42" {
		t.Errorf("a run after the failure: %s", r)
	}
}
