package upstream

import (
	"encoding/json"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tap finds a tools/list answer in an event stream however the stream
// is cut into reads, with CRLF line ends, comments, other events and data
// split over several data: lines; the SDK still reads every byte.
func TestTapEventStream(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(7))
	l := &rawLists{}
	l.sent(&jsonrpc.Request{ID: id, Method: "tools/list"})
	stream := ": comment\r\nevent: message\r\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\r\n\r\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"tools\":[{\"name\":\"t\",\n" +
		"data: \"inputSchema\":{\"type\":\"object\",\"properties\":{\"z\":{},\"a\":{}}}}]}}\n\n"
	tp := &tap{ReadCloser: io.NopCloser(iotest.OneByteReader(strings.NewReader(stream))), l: l, events: true}
	got, err := io.ReadAll(tp)
	if err != nil || string(got) != stream {
		t.Fatalf("the SDK would read %q, %v", got, err)
	}
	// What the SDK decoded from the same answer: the raw JSON replaces it.
	decoded := map[string]any{"type": "object", "properties": map[string]any{"z": map[string]any{}, "a": map[string]any{}}}
	tools := []*mcp.Tool{{Name: "t", InputSchema: decoded}}
	l.keepOrder(tools)
	raw, ok := tools[0].InputSchema.(json.RawMessage)
	if !ok || string(raw) != `{"type":"object","properties":{"z":{},"a":{}}}` {
		t.Errorf("inputSchema = %v", tools[0].InputSchema)
	}
	if l.waiting() {
		t.Errorf("a listing is over, yet an answer is still awaited")
	}
}

// A capture that does not decode to what the SDK decoded (stale, or from
// another tool of the same name) never replaces the SDK's schema.
func TestKeepOrderOnlyWhenEqual(t *testing.T) {
	l := &rawLists{schemas: map[string]rawToolSchema{"t": {input: json.RawMessage(`{"type":"object","properties":{"z":{},"a":{}}}`)}}}
	stale := map[string]any{"type": "object", "properties": map[string]any{"b": map[string]any{"type": "number"}}}
	tools := []*mcp.Tool{{Name: "t", InputSchema: stale}}
	l.keepOrder(tools)
	if _, ok := tools[0].InputSchema.(map[string]any); !ok {
		t.Errorf("a stale capture replaced the SDK's schema: %v", tools[0].InputSchema)
	}
}
