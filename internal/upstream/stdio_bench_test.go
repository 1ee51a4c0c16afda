package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"testing"

	"github.com/codemode-mcp/codemode/internal/testutil"
)

// The cost of one tool call to a real stdio server (server-everything's
// get-sum), through the Manager (the go-sdk client, the stdout filter, the
// redaction of the result) and, for comparison, through a minimal JSON-RPC
// client over the same kind of pipes that writes the request line and
// decodes the response with encoding/json. allocs/op and B/op are exact;
// cpu-ns/op is this process's CPU per call (the server's is not counted),
// which a loaded machine does not inflate as it does ns/op.

func BenchmarkCallToolEverythingStdio(b *testing.B) {
	m := New(testutil.Config(testutil.Everything(b, "everything")).Servers, &Options{Logger: slog.New(slog.DiscardHandler)})
	defer m.Close()
	ctx := context.Background()
	args := json.RawMessage(`{"a":1,"b":2}`)
	if _, err := m.CallTool(ctx, "everything", "get-sum", args); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := testutil.ReportCPU(b)
	for b.Loop() {
		if _, err := m.CallTool(ctx, "everything", "get-sum", args); err != nil {
			b.Fatal(err)
		}
	}
	cpu()
}

func BenchmarkRawJSONRPCEverythingStdio(b *testing.B) {
	s := testutil.Everything(b, "everything")
	cmd := exec.Command(s.Command, s.Args...)
	w, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { w.Close(); cmd.Wait() }()
	r := bufio.NewReaderSize(out, 64<<10)
	id := 0
	type response struct {
		ID     *int `json:"id"`
		Result *struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent json.RawMessage `json:"structuredContent"`
			IsError           bool            `json:"isError"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	call := func(method, params string) (*response, error) {
		id++
		if _, err := fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
			return nil, err
		}
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return nil, err
			}
			var resp response
			if err := json.Unmarshal(line, &resp); err != nil {
				return nil, err
			}
			if resp.ID == nil || *resp.ID != id { // a notification
				continue
			}
			if resp.Error != nil {
				return nil, fmt.Errorf("%s: %s", method, resp.Error.Message)
			}
			return &resp, nil
		}
	}
	if _, err := call("initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}`); err != nil {
		b.Fatal(err)
	}
	if _, err := io.WriteString(w, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		b.Fatal(err)
	}
	const params = `{"name":"get-sum","arguments":{"a":1,"b":2}}`
	if _, err := call("tools/call", params); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := testutil.ReportCPU(b)
	for b.Loop() {
		res, err := call("tools/call", params)
		if err != nil || res.Result == nil || len(res.Result.Content) == 0 {
			b.Fatal(res, err)
		}
	}
	cpu()
}
