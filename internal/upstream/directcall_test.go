package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/config"
)

// lineConn decodes every line into the message the SDK's own decoding
// (jsonrpc.DecodeMessage) makes of it, and fails where it fails.
func TestLineConnDecodesAsTheSDK(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}`,
		`{"jsonrpc":"2.0","id":"codemode-1","result":{}}`,
		`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad","data":{"why":1}}}`,
		`{"jsonrpc":"2.0","id":2.0,"result":null}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}`,
		`{"jsonrpc":"2.0","id":"r1","method":"roots/list","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":""}`,
		`{"jsonrpc":"1.0","id":1,"result":{}}`,
		`{"id":1,"result":{}}`,
		`{"jsonrpc":"2.0","result":{}}`,
		`{"jsonrpc":"2.0","id":true,"result":{}}`,
		`{"jsonrpc":"2.0","id":{},"result":{}}`,
		`{"jsonrpc":"2.0","ID":1,"Result":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":5}`,
		`{"jsonrpc":"2.0","id":1,"result":{"a":"\u00e9\n"}}`,
		`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}`,
		`{"jsonrpc":"2.0","id":1,"result":` + strings.Repeat("[", 999) + strings.Repeat("]", 999) + `}`,
	}
	for _, line := range lines {
		want, wantErr := jsonrpc.DecodeMessage([]byte(line))
		got, err := decodeLine([]byte(line))
		short := line[:min(len(line), 80)]
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v, the SDK's %v", short, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if len(got) != 1 || !reflect.DeepEqual(normalize(got[0]), normalize(want)) {
			t.Errorf("%s:\n got %#v\nwant %#v", short, got[0], want)
		}
	}
	// A batch, as ioConn reads one.
	got, err := decodeLine([]byte(`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"ping","id":"p"}]`))
	if err != nil || len(got) != 2 {
		t.Fatalf("batch: %v %v", got, err)
	}
	if _, err := decodeLine([]byte(`[]`)); err == nil {
		t.Error("an empty batch was accepted")
	}
}

// normalize makes nil and empty raw JSON compare equal (the SDK keeps a
// nil slice where lineConn keeps an empty one, and neither is sent).
func normalize(m jsonrpc.Message) jsonrpc.Message {
	switch m := m.(type) {
	case *jsonrpc.Request:
		c := *m
		if len(c.Params) == 0 {
			c.Params = nil
		}
		return &c
	case *jsonrpc.Response:
		c := *m
		if len(c.Result) == 0 {
			c.Result = nil
		}
		return &c
	}
	return m
}

// The direct path builds the result the SDK's CallToolResult.UnmarshalJSON
// builds, on the common shape and on every other.
func TestDirectResultAsTheSDK(t *testing.T) {
	results := []string{
		`{"content":[{"type":"text","text":"The sum of 1 and 2 is 3."}]}`,
		`{"content":[{"type":"text","text":"a"},{"type":"text","text":""}],"structuredContent":{"sum":3,"xs":[1,2.5,"x",null,true]}}`,
		`{"content":[],"isError":true}`,
		`{"structuredContent":[1,2]}`,
		`{"content":null}`,
		`{}`,
		`null`,
		`{"content":[{"type":"text","text":"x","annotations":{"audience":["user"]}}]}`,
		`{"content":[{"type":"text","text":"x","_meta":{"k":"v"}}]}`,
		`{"_meta":{"progressToken":1},"content":[{"type":"text","text":"x"}]}`,
		`{"content":[{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}]}`,
		`{"content":[{"type":"audio","data":"aGVsbG8=","mimeType":"audio/wav"}]}`,
		`{"content":[{"type":"resource_link","uri":"file:///x","name":"x"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///x","text":"hi"}}]}`,
		`{"content":[{"type":"text","text":"x"},{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}]}`,
		`{"content":[{"type":"unknown-kind","text":"x"}]}`,
		`{"content":[{"text":"no type"}]}`,
		`{"content":[{"type":"text","text":"x"}],"extra":1}`,
		`{"content":[{"type":"text","text":"x"}],"resultType":"complete"}`,
		`{"content":"not an array"}`,
		`{"content":[{"type":"text","text":5}]}`,
		`{"isError":"yes"}`,
		`{"Content":[{"type":"text","text":"x"}]}`,
		`{"content":[{"type":"text","text":"x","TEXT":"y"}]}`,
		`{"content":[{"type":"text","text":"\ud83d\ude00 \u2028"}]}`,
		`[1]`,
		`"text"`,
	}
	for _, r := range results {
		var want mcp.CallToolResult
		wantErr := json.Unmarshal([]byte(r), &want)
		got, err := decodeCallResult([]byte(r))
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%s: error %v, the SDK's %v", r, err, wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if !reflect.DeepEqual(got, &want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(&want)
			t.Errorf("%s:\n got %s %#v\nwant %s %#v", r, g, got, w, &want)
		}
	}
}

func FuzzDirectResultAsTheSDK(f *testing.F) {
	f.Add(`{"content":[{"type":"text","text":"x"}],"structuredContent":{"a":1}}`)
	f.Add(`{"content":[{"type":"image","data":"aGVsbG8=","mimeType":"image/png"}],"isError":true}`)
	f.Fuzz(func(t *testing.T, r string) {
		var want mcp.CallToolResult
		wantErr := json.Unmarshal([]byte(r), &want)
		got, err := decodeCallResult([]byte(r))
		if wantErr != nil || err != nil {
			return // both decoders are lenient in different places on invalid input
		}
		if !reflect.DeepEqual(got, &want) {
			t.Errorf("%q: got %#v, want %#v", r, got, &want)
		}
	})
}

// directVersion is a protocol version the direct path serves: the helper
// server (go-sdk) would otherwise negotiate the newest.
var directVersion = &Options{ProtocolVersion: "2025-11-25"}

// Tool calls to a stdio server take the direct path, concurrently with each
// other and with the SDK's own requests on the same connection, each
// getting its own answer.
func TestDirectCalls(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, []config.Server{helperServer(t, "h", "server")}, directVersion)
	snapshot(t, m, "h")
	s := liveSession(t, m, "h")
	if s.direct == nil {
		t.Fatal("the stdio session does not take the direct path")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := range 20 {
		wg.Go(func() {
			want := fmt.Sprintf("call %d", i)
			res, err := m.CallTool(context.Background(), "h", "echo", map[string]any{"text": want})
			if err != nil {
				errs <- err
				return
			}
			if got := res.Content[0].(*mcp.TextContent).Text; got != want {
				errs <- fmt.Errorf("call %d answered %q", i, got)
			}
		})
		wg.Go(func() {
			if _, err := s.cs.ListTools(context.Background(), nil); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// A tool error is a result, as through the SDK.
	res, err := m.CallTool(context.Background(), "h", "echo", map[string]any{"text": 5})
	if err != nil || !res.IsError {
		t.Errorf("invalid input: %v %+v", err, res)
	}
	// So is a call of a tool the server does not have.
	if res, err := m.CallTool(context.Background(), "h", "no-such-tool", nil); err == nil && !res.IsError {
		t.Errorf("unknown tool: %+v", res)
	}
}

// A direct call carries the caller's _meta (WithCallMeta: a trace context)
// as a call through the SDK does.
func TestDirectCallMeta(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, []config.Server{helperServer(t, "h", "server")}, directVersion)
	snapshot(t, m, "h")
	if liveSession(t, m, "h").direct == nil {
		t.Fatal("the stdio session does not take the direct path")
	}
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx := WithCallMeta(context.Background(), map[string]any{"traceparent": tp})
	res, err := m.CallTool(ctx, "h", "meta", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != `{"traceparent":"`+tp+`"}` {
		t.Errorf("the server saw _meta %s", got)
	}
}

// A session that negotiated 2026-07-28 or later calls through the SDK,
// which adds what that version needs.
func TestDirectCallsOnlyBeforeNewProtocol(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, []config.Server{helperServer(t, "h", "server")}, &Options{ProtocolVersion: newProtocolVersion})
	snapshot(t, m, "h")
	s := liveSession(t, m, "h")
	if v := s.cs.InitializeResult().ProtocolVersion; v < newProtocolVersion {
		t.Skipf("the helper server negotiated %s", v)
	}
	if s.direct != nil {
		t.Error("a session on the new protocol takes the direct path")
	}
	if got := call(t, m, "h", "echo", map[string]any{"text": "sdk"}); got != "sdk" {
		t.Errorf("echo = %q", got)
	}
}

// A direct call given up by its caller is cancelled upstream
// (notifications/cancelled), and the session goes on.
func TestDirectCallCancelled(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, []config.Server{helperServer(t, "h", "server")}, directVersion)
	snapshot(t, m, "h")
	if liveSession(t, m, "h").direct == nil {
		t.Fatal("the stdio session does not take the direct path")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.CallTool(ctx, "h", "block", nil)
		done <- err
	}()
	waitFor(t, "the call to reach the server", func() bool { return call(t, m, "h", "state", nil) == "blocking 1 cancelled 0" })
	cancel()
	asError(t, <-done, "h", Canceled)
	waitFor(t, "the server to see the cancellation", func() bool { return call(t, m, "h", "state", nil) == "blocking 1 cancelled 1" })
}

// liveSession returns the server's current session.
func liveSession(t *testing.T, m *Manager, id string) *session {
	t.Helper()
	c, err := m.server(id)
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sess == nil {
		t.Fatal("no live session")
	}
	return c.sess
}

// A server that dies during a direct call fails the call as it would
// through the SDK (Died, with the exit and stderr), and a Manager closing
// ends direct calls in flight.
func TestDirectCallDeathAndClose(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, []config.Server{helperServer(t, "h", "server")}, directVersion)
	snapshot(t, m, "h")
	_, err := m.CallTool(context.Background(), "h", "crash", nil)
	e := asError(t, err, "h", Died)
	if !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(e.StderrTail, "about to crash on purpose") {
		t.Fatalf("crash during a direct call: %v (tail %q)", err, e.StderrTail)
	}

	m2, _ := newManager(t, []config.Server{helperServer(t, "h", "server")}, directVersion)
	snapshot(t, m2, "h")
	if liveSession(t, m2, "h").direct == nil {
		t.Fatal("the stdio session does not take the direct path")
	}
	done := make(chan error, 1)
	go func() {
		_, err := m2.CallTool(context.Background(), "h", "block", nil)
		done <- err
	}()
	waitFor(t, "the call to reach the server", func() bool { return call(t, m2, "h", "state", nil) == "blocking 1 cancelled 0" })
	m2.Close()
	asError(t, <-done, "h", Unavailable)
}

// refusingBudget is a ReceiveBudget that holds up to max bytes in all.
type refusingBudget struct {
	max, held int64
}

func (b *refusingBudget) Reserve(n int64) error {
	if b.held+n > b.max {
		return fmt.Errorf("the run's memory budget is spent (%d bytes asked)", n)
	}
	b.held += n
	return nil
}

// A direct call's answer is held by the caller's ReceiveBudget before it is
// decoded, and one the budget refuses fails the call, as through the SDK.
func TestDirectCallReceiveBudget(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, []config.Server{helperServer(t, "h", "server")}, directVersion)
	snapshot(t, m, "h")
	if liveSession(t, m, "h").direct == nil {
		t.Fatal("the stdio session does not take the direct path")
	}
	b := &refusingBudget{max: 1000}
	if _, err := m.CallTool(WithReceiveBudget(context.Background(), b), "h", "echo", map[string]any{"text": "small"}); err != nil {
		t.Fatal(err)
	}
	if b.held == 0 {
		t.Error("the answer was not charged to the budget")
	}
	_, err := m.CallTool(WithReceiveBudget(context.Background(), b), "h", "echo", map[string]any{"text": strings.Repeat("x", 2000)})
	if err == nil || !strings.Contains(err.Error(), "codemode dropped the answer: the run's memory budget is spent") {
		t.Errorf("an answer over the budget: %v", err)
	}
}
