package serve_test

// The run history and saved scripts through the surfaces: every surface's
// runs are recorded, and every code-taking tool runs a saved script with
// args.

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/history"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/scripts"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// recorded is an in-process gateway whose runs are recorded, with saved
// scripts, every surface but thoughtbox served.
type recorded struct {
	st  *store.Store
	rec *history.Recorder
	sc  *scripts.Scripts
	cs  *mcp.ClientSession
}

func newRecorded(t *testing.T) *recorded {
	t.Helper()
	st := store.New(&store.Options{Dir: t.TempDir()})
	t.Cleanup(func() { st.Close() })
	rec := history.New(st.History(), nil)
	t.Cleanup(func() { rec.Close(context.Background()) })
	sc := scripts.New(st)
	cfg := testutil.Config(config.Server{Name: "calc", Transport: config.Stdio, Command: "in-memory"})
	cfg.Serve.Surfaces = []string{"run", "search-execute", "files", "emceepee"}
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"calc": calcServer()}),
		Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { mgr.Close() })
	srv := serve.New(run.New(cfg, catalog.New(mgr), mgr, &run.Options{Observer: rec}), mgr,
		&serve.Options{Logger: slog.New(slog.DiscardHandler), Scripts: sc.Resolve})
	return &recorded{st: st, rec: rec, sc: sc, cs: connectInMemory(t, srv, "recorded-client")}
}

func (g *recorded) call(t *testing.T, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx := testutil.Context(t)
	res, err := g.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

// waitWritten waits until the recorder has written n runs in all.
func (g *recorded) waitWritten(t *testing.T, n uint64) {
	t.Helper()
	ch, stop := g.rec.Subscribe()
	defer stop()
	for g.rec.Written()+g.rec.Dropped() < n {
		<-ch
	}
	if g.rec.Dropped() > 0 {
		t.Fatalf("%d runs dropped", g.rec.Dropped())
	}
}

func resultOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	b, _ := json.Marshal(res.StructuredContent)
	var r struct {
		Result json.RawMessage `json:"result"`
	}
	json.Unmarshal(b, &r)
	return string(r.Result)
}

// Every run surface's runs are in the history: which surface and tool,
// the session and client, the code as sent, and the calls.
func TestHistoryEverySurface(t *testing.T) {
	t.Parallel()
	g := newRecorded(t)
	calls := []struct {
		tool, surface, code string
	}{
		{"codemode_run", "run", `import { add } from "@codemode/servers/calc"; globalThis.__codemode_result__ = await add({ a: 1, b: 2 });`},
		{"search", "search-execute", `async (catalog) => Object.keys(catalog.operations)`},
		{"execute", "search-execute", `async () => calc.add({ a: 1, b: 2 })`},
		{"executeToolCode", "files", `return await calc.add({ a: 1, b: 2 })`},
		{"codemode_search", "emceepee", ""},
		{"codemode_execute", "emceepee", `return await mcp.callTool("calc", "add", { a: 1, b: 2 })`},
	}
	for _, c := range calls {
		args := map[string]any{"code": c.code}
		if c.tool == "codemode_search" {
			args = map[string]any{"query": "add"} // not a run
		}
		if res := g.call(t, c.tool, args); res.IsError {
			t.Fatalf("%s: %v", c.tool, res.Content)
		}
	}
	g.waitWritten(t, 5)
	runs, _, err := g.st.History().List(context.Background(), store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range runs {
		got = append(got, r.Surface+"/"+r.Tool)
		if r.Client != "recorded-client/1" || r.Outcome != "ok" {
			t.Errorf("run %s/%s: client %q outcome %q", r.Surface, r.Tool, r.Client, r.Outcome)
		}
	}
	slices.Reverse(got)
	want := []string{"run/codemode_run", "search-execute/search", "search-execute/execute", "files/executeToolCode", "emceepee/codemode_execute"}
	if !slices.Equal(got, want) {
		t.Errorf("recorded %v, want %v", got, want)
	}
	full, err := g.st.History().Get(context.Background(), runs[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if full.Code != calls[5].code || len(full.Calls) != 1 || full.Calls[0].Server != "calc" || full.Calls[0].Tool != "add" {
		t.Errorf("the last run: %+v", full)
	}
}

// Every code-taking tool runs a saved script by name, with args; wrong
// requests are refused with what to fix.
func TestSavedScripts(t *testing.T) {
	t.Parallel()
	g := newRecorded(t)
	ctx := context.Background()
	// A module for the run tool, a function body for the others.
	if _, _, err := g.sc.Save(ctx, "sum-module", `import args from "@codemode/args";
import { add } from "@codemode/servers/calc";
globalThis.__codemode_result__ = Number(await add({ a: args.a, b: args.b }));`, ""); err != nil {
		t.Fatal(err)
	}
	g.sc.Save(ctx, "sum-body", `return Number(await calc.add({ a: args.a, b: args.b }))`, "v1 adds")
	g.sc.Save(ctx, "sum-mcp", `return await mcp.callTool("calc", "add", { a: args.a, b: args.b })`, "emceepee's form")
	g.sc.Save(ctx, "sum-body", `return Number(await calc.add({ a: args.a, b: args.b })) * 10`, "v2 adds and multiplies")
	for _, tc := range []struct {
		tool, script string
		want         string
	}{
		{"codemode_run", "sum-module", "5"},
		{"executeToolCode", "sum-body", "50"},
		{"executeToolCode", "sum-body@1", "5"},
		{"codemode_execute", "sum-mcp", "5"},
	} {
		res := g.call(t, tc.tool, map[string]any{"script": tc.script, "args": map[string]any{"a": 2, "b": 3}})
		got := resultOf(t, res)
		if tc.tool == "codemode_execute" {
			got = strings.TrimSpace(res.Content[0].(*mcp.TextContent).Text)
		}
		if res.IsError || !strings.Contains(got, tc.want) {
			t.Errorf("%s %s: %s (error %v) %v", tc.tool, tc.script, got, res.IsError, res.Content)
		}
	}
	// execute takes an arrow function: the body script does not fit it,
	// but one saved as a function does.
	g.sc.Save(ctx, "sum-fn", `async () => Number(await calc.add({ a: args.a, b: args.b }))`, "")
	if got := resultOf(t, g.call(t, "execute", map[string]any{"script": "sum-fn", "args": map[string]any{"a": 1, "b": 1}})); got != "2" {
		t.Errorf("execute sum-fn: %s", got)
	}

	g.waitWritten(t, 5)
	runs, _, _ := g.st.History().List(ctx, store.RunFilter{Limit: 1})
	if r, _ := g.st.History().Get(ctx, runs[0].ID); r.Script != "sum-fn@1" || string(r.Args) != `{"a":1,"b":1}` {
		t.Errorf("the script run's record: script %q args %s", r.Script, r.Args)
	}

	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"script": "nope"}, `there is no saved script \"nope\"`},
		{map[string]any{"script": "nope"}, "sum-body, sum-fn, sum-mcp, sum-module"},
		{map[string]any{"script": "sum-body", "code": "1"}, `pass either \"code\" or \"script\"`},
		{map[string]any{"script": "sum-body", "args": []int{1}}, `\"args\" must be an object`},
		{map[string]any{"script": "../etc"}, "not a valid script name"},
		{map[string]any{"script": "sum-body@x"}, "the version after @"},
		{map[string]any{"script": 7}, `\"script\" must be the name of a saved script`},
	} {
		res := g.call(t, "executeToolCode", tc.args)
		b, _ := json.Marshal(res)
		if !res.IsError || !strings.Contains(string(b), tc.want) || !strings.Contains(string(b), "INVALID_REQUEST") {
			t.Errorf("%v: %s, want an INVALID_REQUEST error with %q", tc.args, b, tc.want)
		}
	}
}
