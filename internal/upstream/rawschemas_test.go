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
	tools := []*mcp.Tool{{Name: "t", InputSchema: map[string]any{"type": "object"}}}
	l.keepOrder(tools)
	raw, ok := tools[0].InputSchema.(json.RawMessage)
	if !ok || string(raw) != `{"type":"object","properties":{"z":{},"a":{}}}` {
		t.Errorf("inputSchema = %v", tools[0].InputSchema)
	}
}
