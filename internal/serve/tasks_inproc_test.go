package serve_test

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/serve"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

const waitCode = `import { wait } from "@codemode/servers/slow";
globalThis.__codemode_result__ = await wait({});`

type taskWire struct {
	TaskID        string   `json:"taskId"`
	Status        string   `json:"status"`
	StatusMessage string   `json:"statusMessage"`
	TTL           *float64 `json:"ttl"`
	PollInterval  float64  `json:"pollInterval"`
	CreatedAt     string   `json:"createdAt"`
}

func decodeAs[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

// A 2025-11-25 client: the gateway declares capabilities.tasks and every
// tool's taskSupport; a call with params.task becomes a task at once,
// which tasks/get follows, tasks/list lists, tasks/result waits for (and
// returns with its related-task _meta), and tasks/cancel cancels, the
// upstream call with it.
func TestTasks20251125(t *testing.T) {
	t.Parallel()
	slow := newSlowServer()
	st := store.New(&store.Options{Dir: t.TempDir()})
	t.Cleanup(func() { st.Close() })
	g := newLongGateway(t, map[string]*mcp.Server{"slow": slow.Server}, nil, &serve.Options{Store: st})
	c, init := g.rawConnect(t, "2025-11-25")
	caps := decodeAs[struct {
		Capabilities struct {
			Tasks struct {
				Cancel, List json.RawMessage
				Requests     struct {
					Tools struct{ Call json.RawMessage }
				}
			}
		}
	}](t, init).Capabilities.Tasks
	if caps.Cancel == nil || caps.List == nil || caps.Requests.Tools.Call == nil {
		t.Fatalf("initialize: %s", init)
	}
	tools := decodeAs[struct {
		Tools []struct {
			Name      string
			Execution struct{ TaskSupport string }
		}
	}](t, c.call("tools/list", map[string]any{}))
	if len(tools.Tools) != 1 || tools.Tools[0].Execution.TaskSupport != "optional" {
		t.Fatalf("tools/list: %+v", tools)
	}

	created := decodeAs[struct{ Task taskWire }](t, c.call("tools/call", map[string]any{"name": "codemode_run", "arguments": map[string]any{"code": waitCode}, "task": map[string]any{"ttl": 120000}})).Task
	if created.TaskID == "" || created.Status != "working" || created.TTL == nil || *created.TTL != 120000 || created.PollInterval <= 0 {
		t.Fatalf("CreateTaskResult: %+v", created)
	}
	await(t, slow.waiting, "upstream call")
	if got := decodeAs[taskWire](t, c.call("tasks/get", map[string]any{"taskId": created.TaskID})); got.Status != "working" || got.TaskID != created.TaskID {
		t.Errorf("tasks/get: %+v", got)
	}
	list := decodeAs[struct{ Tasks []taskWire }](t, c.call("tasks/list", map[string]any{}))
	if len(list.Tasks) != 1 || list.Tasks[0].TaskID != created.TaskID {
		t.Errorf("tasks/list: %+v", list)
	}
	result := c.send("tasks/result", map[string]any{"taskId": created.TaskID})
	slow.release <- struct{}{}
	r := await(t, result, "tasks/result")
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	res := decodeAs[struct {
		StructuredContent runResponse `json:"structuredContent"`
		Meta              map[string]struct {
			TaskID string `json:"taskId"`
		} `json:"_meta"`
	}](t, r.Result)
	if string(res.StructuredContent.Result) != `"released"` || res.Meta["io.modelcontextprotocol/related-task"].TaskID != created.TaskID {
		t.Errorf("tasks/result: %s", r.Result)
	}
	if got := decodeAs[taskWire](t, c.call("tasks/get", map[string]any{"taskId": created.TaskID})); got.Status != "completed" {
		t.Errorf("after the end: %+v", got)
	}

	// Cancelled: the task, and the upstream call the run was waiting on.
	second := decodeAs[struct{ Task taskWire }](t, c.call("tools/call", map[string]any{"name": "codemode_run", "arguments": map[string]any{"code": waitCode}, "task": map[string]any{}})).Task
	await(t, slow.waiting, "upstream call")
	if got := decodeAs[taskWire](t, c.call("tasks/cancel", map[string]any{"taskId": second.TaskID})); got.Status != "cancelled" {
		t.Errorf("tasks/cancel: %+v", got)
	}
	await(t, slow.cancelled, "upstream cancellation")
	if _, err := c.callErr("tasks/result", map[string]any{"taskId": second.TaskID}); err == nil || !strings.Contains(err.Message, "cancelled") {
		t.Errorf("tasks/result of a cancelled task: %v", err)
	}
	if _, err := c.callErr("tasks/cancel", map[string]any{"taskId": second.TaskID}); err == nil || err.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("cancelling it again: %v", err)
	}
	if _, err := c.callErr("tasks/get", map[string]any{"taskId": "nope"}); err == nil || err.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("an unknown task: %v", err)
	}
}

// A 2026-07-28 client that declares the tasks extension (codemode's own
// upstream client, which follows tasks): a call still running after
// TaskAfter goes on as a task, the client polls it and gets the result.
// A quick call is answered as usual.
func TestTasks20260728(t *testing.T) {
	t.Parallel()
	slow := newSlowServer()
	st := store.New(&store.Options{Dir: t.TempDir()})
	t.Cleanup(func() { st.Close() })
	g := newLongGateway(t, map[string]*mcp.Server{"slow": slow.Server}, nil, &serve.Options{Store: st, TaskAfter: time.Millisecond})
	mgr := upstream.New([]config.Server{{ID: "gw", Name: "gw", Transport: config.Stdio, Command: "in-memory"}},
		&upstream.Options{Dial: upstream.DialInMemory(map[string]*mcp.Server{"gw": g.srv.MCP()}), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { mgr.Close() })
	ctx := testutil.Context(t)
	if _, err := mgr.Snapshot(ctx, "gw"); err != nil {
		t.Fatal(err)
	}
	asTask := make(chan struct{})
	var once bool
	pctx := upstream.WithProgress(ctx, func(_, _ float64, msg string) {
		if msg == "running as a task" && !once {
			once = true
			close(asTask)
		}
	})
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := mgr.CallTool(pctx, "gw", "codemode_run", map[string]any{"code": waitCode})
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	await(t, asTask, "task")
	slow.release <- struct{}{}
	res := await(t, done, "result")
	if res == nil || !strings.Contains(resultJSON(t, res), `"result":"released"`) {
		t.Fatalf("result: %s", resultJSON(t, res))
	}
	quick, err := mgr.CallTool(ctx, "gw", "codemode_run", map[string]any{"code": `globalThis.__codemode_result__ = 42`})
	if err != nil || !strings.Contains(resultJSON(t, quick), `"result":42`) {
		t.Fatalf("quick: %v %s", err, resultJSON(t, quick))
	}
}

func resultJSON(t *testing.T, res *mcp.CallToolResult) string {
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Behind --stateless replicas sharing a store, a task one replica runs is
// followed, cancelled and fetched through another: the store holds its
// state, and the replica running it sees the cancellation there.
func TestTasksAcrossReplicas(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	slowA, slowB := newSlowServer(), newSlowServer()
	stA, stB := store.New(&store.Options{Dir: dir}), store.New(&store.Options{Dir: dir})
	t.Cleanup(func() { stA.Close(); stB.Close() })
	a := newLongGateway(t, map[string]*mcp.Server{"slow": slowA.Server}, nil, &serve.Options{Store: stA})
	b := newLongGateway(t, map[string]*mcp.Server{"slow": slowB.Server}, nil, &serve.Options{Store: stB})
	ca, _ := a.rawConnect(t, "2025-11-25")
	cb, _ := b.rawConnect(t, "2025-11-25")

	first := decodeAs[struct{ Task taskWire }](t, ca.call("tools/call", map[string]any{"name": "codemode_run", "arguments": map[string]any{"code": waitCode}, "task": map[string]any{}})).Task
	await(t, slowA.waiting, "upstream call on A")
	if got := decodeAs[taskWire](t, cb.call("tasks/get", map[string]any{"taskId": first.TaskID})); got.Status != "working" {
		t.Errorf("B's tasks/get: %+v", got)
	}
	result := cb.send("tasks/result", map[string]any{"taskId": first.TaskID})
	slowA.release <- struct{}{}
	if r := await(t, result, "B's tasks/result"); r.Error != nil || !strings.Contains(string(r.Result), `"released"`) {
		t.Errorf("B's tasks/result: %s %v", r.Result, r.Error)
	}

	second := decodeAs[struct{ Task taskWire }](t, ca.call("tools/call", map[string]any{"name": "codemode_run", "arguments": map[string]any{"code": waitCode}, "task": map[string]any{}})).Task
	await(t, slowA.waiting, "upstream call on A")
	cb.call("tasks/cancel", map[string]any{"taskId": second.TaskID})
	await(t, slowA.cancelled, "A's upstream call cancelled through B")
	if got := decodeAs[taskWire](t, ca.call("tasks/get", map[string]any{"taskId": second.TaskID})); got.Status != "cancelled" {
		t.Errorf("A's tasks/get: %+v", got)
	}
}
