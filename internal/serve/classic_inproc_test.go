package serve_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/history"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

// A server with "codeMode": false is served as ordinary MCP tools
// (<serverId>__<tool>, the upstream's schemas and annotations) beside the
// run tool, and scripts do not see it; "both" is in both places. A direct
// call is validated and answered with the upstream's
// result; a tool the upstream adds is served after its list_changed.
func TestClassicTools(t *testing.T) {
	t.Parallel()
	slow, both := newSlowServer(), newSlowServer()
	g := newLongGateway(t, map[string]*mcp.Server{"slow": slow.Server, "both": both.Server, "calc": calcServer()}, func(c *config.Config) {
		for i := range c.Servers {
			switch c.Servers[i].ID {
			case "slow":
				c.Servers[i].CodeMode = config.CodeModeOff
			case "both":
				c.Servers[i].CodeMode = config.CodeModeBoth
			}
		}
	}, nil)
	changed := make(chan struct{}, 10)
	cs := g.connect(t, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	ctx := testutil.Context(t)
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	var run *mcp.Tool
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		if tool.Name == "codemode_run" {
			run = tool
		}
	}
	slices.Sort(names)
	want := []string{"both__big", "both__steps", "both__wait", "codemode_run", "slow__big", "slow__steps", "slow__wait"}
	if !slices.Equal(names, want) {
		t.Fatalf("tools/list: %v", names)
	}
	if strings.Contains(run.Description, "@codemode/servers/slow") || !strings.Contains(run.Description, "@codemode/servers/both") {
		t.Errorf("the run tool's description:\n%s", run.Description)
	}

	// Direct: a valid call, an invalid one.
	p := &mcp.CallToolParams{Name: "slow__steps", Arguments: map[string]any{"n": 1}}
	p.SetProgressToken("direct")
	res, err := cs.CallTool(ctx, p)
	if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "stepped" {
		t.Fatalf("slow__steps: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow__steps", Arguments: map[string]any{"n": "two"}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "SchemaValidationError") {
		t.Fatalf("invalid input: %v %+v", err, res)
	}

	// Scripts: slow is not there, both is.
	_, resp := runCode(t, cs, `import { listServers } from "@codemode/discovery";
import * as b from "@codemode/servers/both";
globalThis.__codemode_result__ = { ids: (await listServers()).map((s) => s.serverId), r: await b.steps({ n: 0 }) };`, nil)
	var got struct {
		IDs []string
		R   string
	}
	json.Unmarshal(resp.Result, &got)
	if !slices.Equal(got.IDs, []string{"both", "calc"}) || got.R != "stepped" {
		t.Errorf("script: %s %+v", resp.Result, resp.diags())
	}
	_, resp = runCode(t, cs, `import * as s from "@codemode/servers/slow";`, nil)
	if d := resp.errorDiag(); d == nil || d.Code != "IMPORT_FAILURE" {
		t.Errorf("a script imported slow: %+v", resp.diags())
	}

	// list_changed is followed.
	slow.AddTool(&mcp.Tool{Name: "later", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "later"}}}, nil
		})
	for {
		await(t, changed, "tools/list_changed")
		list, err = cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(list.Tools, func(t *mcp.Tool) bool { return t.Name == "slow__later" }); i >= 0 {
			if a := list.Tools[i].Annotations; a == nil || !a.ReadOnlyHint {
				t.Errorf("annotations: %+v", a)
			}
			break
		}
	}
}

// Direct calls are under the policy: a tool that needs approval is put to
// the client (elicitation), and refused with APPROVAL_REQUIRED when the
// client cannot be asked; a denied tool is not served.
func TestClassicToolsUnderThePolicy(t *testing.T) {
	t.Parallel()
	slow := newSlowServer()
	g := newLongGateway(t, map[string]*mcp.Server{"slow": slow.Server}, func(c *config.Config) {
		c.Servers[0].CodeMode = config.CodeModeOff
		c.Servers[0].Approval = config.ApprovalAll
		c.Servers[0].DenyTools = []string{"big"}
	}, nil)
	asked := 0
	cs := connectLegacy(t, g.srv, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked++
		return &mcp.ElicitResult{Action: "accept"}, nil
	}})
	ctx := testutil.Context(t)
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if tool.Name == "slow__big" {
			t.Errorf("a denied tool is served: %v", tool.Name)
		}
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow__steps", Arguments: map[string]any{"n": 0}})
	if err != nil || res.IsError || asked != 1 {
		t.Fatalf("approved call: %v %+v, asked %d", err, res, asked)
	}
	bare := connectLegacy(t, g.srv, nil)
	res, err = bare.CallTool(ctx, &mcp.CallToolParams{Name: "slow__steps", Arguments: map[string]any{"n": 0}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "APPROVAL_REQUIRED") {
		t.Fatalf("without elicitation: %v %+v", err, res)
	}
}

// A direct call is observed as a run of one call: the run history keeps
// it (surface "classic", the direct tool's name, the call and its
// outcome), as metrics and traces see it; a client that sent a
// progressToken hears of its start and end.
func TestClassicToolsObserved(t *testing.T) {
	t.Parallel()
	st := store.New(&store.Options{Dir: t.TempDir()})
	t.Cleanup(func() { st.Close() })
	rec := history.New(st.History(), nil)
	g := newLongGatewayRun(t, map[string]*mcp.Server{"slow": newSlowServer().Server}, func(c *config.Config) {
		c.Servers[0].CodeMode = config.CodeModeOff
	}, nil, &run.Options{Observer: rec})
	seen := make(chan string, 100)
	cs := g.connect(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		seen <- r.Params.Message
	}})
	ctx := testutil.Context(t)
	p := &mcp.CallToolParams{Name: "slow__steps", Arguments: map[string]any{"n": 1}}
	p.SetProgressToken("direct")
	if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
		t.Fatalf("slow__steps: %v %+v", err, res)
	}
	// The client's SDK hands notifications over on a goroutine of its
	// own: wait for the last one.
	var msgs []string
	for len(msgs) == 0 || msgs[len(msgs)-1] != "slow/steps done" {
		msgs = append(msgs, await(t, seen, "slow/steps done"))
	}
	if msgs[0] != "slow/steps started" || !slices.Contains(msgs, "slow: step 1 (1/1)") {
		t.Errorf("progress: %q", msgs)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "slow__steps", Arguments: map[string]any{"n": "two"}}); err != nil || !res.IsError {
		t.Fatalf("invalid input: %v %+v", err, res)
	}
	if err := rec.Close(ctx); err != nil {
		t.Fatal(err)
	}
	runs, _, err := st.History().List(ctx, store.RunFilter{})
	if err != nil || len(runs) != 2 {
		t.Fatalf("history: %v %+v", err, runs)
	}
	// Both may start within the same millisecond: told apart by outcome.
	calls := map[string]string{}
	for _, r := range runs {
		got, err := st.History().Get(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Surface != "classic" || got.Tool != "slow__steps" || got.Code != "" ||
			len(got.Calls) != 1 || got.Calls[0].Server != "slow" || got.Calls[0].Tool != "steps" {
			t.Errorf("run: %+v", got)
			continue
		}
		calls[got.Outcome] = got.Calls[0].Outcome
	}
	if calls["ok"] != run.CallOK || calls["UNCAUGHT_EXCEPTION"] != run.CallInvalid {
		t.Errorf("outcomes (run: call): %v", calls)
	}
}

// A direct call that needs approval, from a 2026-07-28 client: the call is
// answered with the question (input required) and a sealed requestState,
// nothing reaches the upstream; the retry with the answer makes the call
// once.
func TestClassicToolInputRequired(t *testing.T) {
	t.Parallel()
	srv, up := policyGatewayCfg(t, writesPolicy, func(c *config.Config) { c.Servers[0].CodeMode = config.CodeModeOff })
	// The client can be asked (it has an elicitation handler), but the
	// middleware that would answer by itself is off: the test answers.
	cs := connectPolicyClient(t, srv, protoMRTR, &elicitor{answer: accept(false)}, &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	ctx := testutil.Context(t)
	p := &mcp.CallToolParams{Name: "store__write", Arguments: map[string]any{"key": "k"}}
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || len(res.InputRequests) != 1 || res.RequestState == "" {
		b, _ := json.Marshal(res)
		t.Fatalf("first call: %s", b)
	}
	var key string
	for k, ir := range res.InputRequests {
		key = k
		if e, ok := ir.(*mcp.ElicitParams); !ok || !strings.Contains(e.Message, "write") {
			t.Fatalf("input request %T %+v", ir, ir)
		}
	}
	if up.count("write") != 0 {
		t.Fatalf("the upstream saw %q before the answer", up.seen())
	}
	p.InputResponses = mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approveAll": false}}}
	p.RequestState = res.RequestState
	res, err = cs.CallTool(ctx, p)
	if err != nil || res.IsError || res.NeedsInput() {
		t.Fatalf("retry: %v %+v", err, res)
	}
	if up.count("write") != 1 {
		t.Errorf("the upstream saw %q", up.seen())
	}
	// Read-only calls need no approval.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "store__read", Arguments: map[string]any{}}); err != nil || res.IsError || res.NeedsInput() {
		t.Fatalf("read: %v %+v", err, res)
	}
}
