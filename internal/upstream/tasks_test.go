package upstream

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// server-everything's simulate-research-query runs only as a task
// (2025-11-25, execution.taskSupport "required"): a call creates the task,
// follows it (its stages reach the call's progress function as the
// statusMessage changes) and returns the report, over stdio and over
// Streamable HTTP.
func TestTaskRequiredToolOverStdioAndHTTP(t *testing.T) {
	t.Parallel()
	base := startNpmHTTP(t, "mcp-server-everything", "streamableHttp")
	ev := testutil.Everything(t, "everything")
	ev.ID = "everything"
	m, _ := newManager(t, []config.Server{
		ev,
		{ID: "remote", Name: "remote", Transport: config.Streamable, URL: base + "/mcp"},
	}, nil)
	for _, id := range []string{"everything", "remote"} {
		t.Run(id, func(t *testing.T) {
			t.Parallel()
			snap := snapshot(t, m, id)
			if snap.TaskSupport["simulate-research-query"] != "required" {
				t.Fatalf("task support: %v", snap.TaskSupport)
			}
			var mu sync.Mutex
			var stages []string
			ctx := testutil.Context(t)
			ctx = WithProgress(ctx, func(_, _ float64, msg string) {
				mu.Lock()
				stages = append(stages, msg)
				mu.Unlock()
			})
			res, err := m.CallTool(ctx, id, "simulate-research-query", map[string]any{"topic": "tide pools"})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || !strings.Contains(resultText(t, res), "Research Report: tide pools") {
				t.Fatalf("result: %s", resultText(t, res))
			}
			if _, leaked := res.Meta[taskMetaKey]; leaked {
				t.Errorf("the task marker reached the result: %v", res.Meta)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(stages) == 0 || !strings.Contains(strings.Join(stages, "|"), "...") {
				t.Errorf("no stage reached the progress function: %q", stages)
			}
		})
	}
}

// A caller that gives up ends the wait at once with Canceled, and the task
// is cancelled upstream: tasks/get then says so.
func TestTaskCancelledWhenTheCallerGivesUp(t *testing.T) {
	t.Parallel()
	ev := testutil.Everything(t, "everything")
	ev.ID = "everything"
	m, _ := newManager(t, []config.Server{ev}, nil)
	snapshot(t, m, "everything")
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{})
	var once sync.Once
	ctx = WithProgress(ctx, func(float64, float64, string) { once.Do(func() { close(started) }) })
	errc := make(chan error, 1)
	go func() {
		_, err := m.CallTool(ctx, "everything", "simulate-research-query", map[string]any{"topic": "x"})
		errc <- err
	}()
	<-started
	cancel()
	asError(t, <-errc, "everything", Canceled)
}

func TestTaskResultInMeta(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		task     bool
	}{
		{"v1", `{"task":{"taskId":"t1","status":"working","ttl":null,"createdAt":"x","lastUpdatedAt":"x"}}`, true},
		{"v2", `{"resultType":"task","taskId":"t2","status":"working","ttlMs":1000,"createdAt":"x","lastUpdatedAt":"x"}`, true},
		{"plain", `{"content":[{"type":"text","text":"task"}]}`, false},
		{"a tool result with a task key", `{"content":[],"task":{"taskId":"t"}}`, false},
		{"complete", `{"resultType":"complete","content":[]}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, ok := taskResultInMeta(json.RawMessage(tc.in))
			if ok != tc.task {
				t.Fatalf("rewritten = %v, want %v", ok, tc.task)
			}
			if !ok {
				return
			}
			msg := &jsonrpc.Response{Result: json.RawMessage(tc.in)}
			rewriteTaskMessage(msg)
			if string(msg.Result) != string(out) {
				t.Errorf("message: %s", msg.Result)
			}
			var res struct {
				Meta map[string]json.RawMessage `json:"_meta"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatal(err)
			}
			tk, err := parseTask(res.Meta[taskMetaKey])
			if err != nil || tk.Status != "working" || !strings.HasPrefix(tk.ID, "t") {
				t.Errorf("task %+v, %v", tk, err)
			}
		})
	}
}

func TestRewriteEvent(t *testing.T) {
	ev := "event: message\nid: 3\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"task\":{\"taskId\":\"a\",\"status\":\"working\"}}}\n\n"
	out := string(rewriteEvent([]byte(ev)))
	if !strings.HasPrefix(out, "event: message\nid: 3\ndata: ") || !strings.HasSuffix(out, "\n\n") || !strings.Contains(out, taskMetaKey) {
		t.Errorf("%q", out)
	}
	plain := "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n"
	if got := string(rewriteEvent([]byte(plain))); got != plain {
		t.Errorf("a plain event changed: %q", got)
	}
	r := &eventRewriter{src: nopCloser{strings.NewReader(plain + ev + "data: tail")}}
	var b strings.Builder
	buf := make([]byte, 7)
	for {
		n, err := r.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if got := b.String(); !strings.HasPrefix(got, plain) || !strings.Contains(got, taskMetaKey) || !strings.HasSuffix(got, "data: tail") {
		t.Errorf("stream: %q", got)
	}
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }
