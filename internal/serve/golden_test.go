package serve

// Golden JSON-RPC transcripts of every surface, as the go-sdk's conformance
// tests keep theirs: testdata/golden/<name>.txtar holds the client's
// messages and the server's expected ones. The gateway serves an in-process
// upstream (goldenUpstream); the test plays the client message by message,
// waits for each call's response, and compares what the server sent with
// the `server` file. After an intended change to a wire format:
//
//	go test -run TestGolden -update ./internal/serve
//
// and review the diff. Figures measured while running (timeMs, durationMs,
// "12ms" in texts) are written as 0.
//
// The archive's comment says which surfaces to serve:
//
//	surfaces: files

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/tools/txtar"

	"github.com/codemode-mcp/codemode/internal/builtin"
	"github.com/codemode-mcp/codemode/internal/builtin/state"
	"github.com/codemode-mcp/codemode/internal/builtin/thoughtbox"
	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

var update = flag.Bool("update", false, "rewrite the server messages of testdata/golden/*.txtar")

// goldenUpstream is the upstream of the transcripts: a calculator with a
// read-only tool, a tool that fails, a resource and a prompt, so that every
// surface has something of each kind to show.
func goldenUpstream() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "calc", Version: "1.0.0"},
		&mcp.ServerOptions{Instructions: "Arithmetic on numbers.", Logger: slog.New(slog.DiscardHandler)})
	s.AddTool(&mcp.Tool{Name: "add", Description: "Add two numbers.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ A, B float64 }
			json.Unmarshal(req.Params.Arguments, &in)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A + in.B)}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "divide", Description: "Divide a by b.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var in struct{ A, B float64 }
			json.Unmarshal(req.Params.Arguments, &in)
			if in.B == 0 {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "division by zero"}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint(in.A / in.B)}}}, nil
		})
	s.AddResource(&mcp.Resource{URI: "calc://constants", Name: "constants", Description: "Mathematical constants.", MIMEType: "application/json"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: `{"pi":3.14159}`}}}, nil
		})
	s.AddPrompt(&mcp.Prompt{Name: "explain", Description: "Explain an operation.", Arguments: []*mcp.PromptArgument{{Name: "op", Required: true}}},
		func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "Explain " + req.Params.Arguments["op"]}}}}, nil
		})
	return s
}

func TestGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden transcripts (%v)", err)
	}
	covered := map[string]bool{}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			for _, s := range runGolden(t, file) {
				covered[s] = true
			}
		})
	}
	for name := range surfaceKinds {
		if !covered[name] {
			t.Errorf("surface %q has no golden transcript: add testdata/golden/%s.txtar (a client file, then go test -run TestGolden -update)", name, name)
		}
	}
}

// runGolden plays one transcript and returns the surfaces it served.
func runGolden(t *testing.T, file string) []string {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	ar := txtar.Parse(data)
	var surfaces, builtins []string
	for _, line := range strings.Split(string(ar.Comment), "\n") {
		if v, ok := strings.CutPrefix(line, "surfaces:"); ok {
			surfaces = strings.Fields(v)
		}
		if v, ok := strings.CutPrefix(line, "builtins:"); ok {
			builtins = strings.Fields(v)
		}
	}
	if len(surfaces) == 0 {
		t.Fatalf("%s: the comment names no surfaces (a line \"surfaces: run\")", file)
	}
	var client []byte
	var want string
	for _, f := range ar.Files {
		switch f.Name {
		case "client":
			client = f.Data
		case "server":
			want = string(f.Data)
		}
	}
	msgs := decodeMessages(t, client)

	cfg := testutil.Config(config.Server{Name: "calc", Transport: config.Stdio, Command: "in-memory"})
	cfg.Serve.Surfaces = surfaces
	// "builtins: thoughtbox store" in the comment serves those built-in
	// servers too, on a fresh store.
	cfg.Builtins = builtins
	if cfg.Builtins == nil {
		cfg.Builtins = []string{}
	}
	kept := store.New(&store.Options{Dir: t.TempDir()})
	defer kept.Close()
	set := builtin.NewSet(thoughtbox.New(kept, nil), state.New(kept, nil))
	set.Configure(cfg, nil)
	calc := upstream.DialInMemory(map[string]*mcp.Server{"calc": goldenUpstream()})
	dialBuiltin := set.Dial()
	mgr := upstream.New(cfg.Servers, &upstream.Options{Logger: slog.New(slog.DiscardHandler),
		Dial: func(ctx context.Context, s config.Server) (mcp.Transport, error) {
			if s.Transport == config.Builtin {
				return dialBuiltin(ctx, s)
			}
			return calc(ctx, s)
		}})
	defer mgr.Close()
	srv := New(run.New(cfg, catalog.New(mgr), set.Caller(mgr), nil), mgr, &Options{Logger: slog.New(slog.DiscardHandler), Version: "golden", WarmupTimeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv.Start(ctx)
	// Connect once the first catalog is in: a client connected before
	// would also receive the tools/list_changed of that first refresh. (The
	// warm-up waits for every upstream, however long that takes.)
	<-srv.warm
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.mcp.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []jsonrpc.Message
	for _, m := range msgs {
		if err := conn.Write(ctx, m); err != nil {
			t.Fatalf("write %v: %v", m, err)
		}
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			continue
		}
		// Read up to this call's response: calls are played one at a
		// time, so what comes before it is notifications.
		rctx, rcancel := context.WithCancel(testutil.Context(t))
		for {
			in, err := conn.Read(rctx)
			if err != nil {
				rcancel()
				t.Fatalf("waiting for the response to %s (id %v): %v", req.Method, req.ID.Raw(), err)
			}
			got = append(got, in)
			if resp, ok := in.(*jsonrpc.Response); ok && resp.ID == req.ID {
				break
			}
		}
		rcancel()
	}
	conn.Close()
	ss.Wait()

	var b bytes.Buffer
	for _, m := range got {
		raw, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		var ind bytes.Buffer
		if err := json.Indent(&ind, raw, "", "\t"); err != nil {
			t.Fatal(err)
		}
		b.Write(scrub(ind.Bytes()))
		b.WriteByte('\n')
	}
	if *update {
		files := []txtar.File{{Name: "client", Data: client}, {Name: "server", Data: b.Bytes()}}
		if err := os.WriteFile(file, txtar.Format(&txtar.Archive{Comment: ar.Comment, Files: files}), 0o644); err != nil {
			t.Fatal(err)
		}
		return surfaces
	}
	if b.String() != want {
		t.Errorf("%s: the server's messages differ from the transcript (go test -run TestGolden -update ./internal/serve rewrites it; review the diff):\n%s",
			file, lineDiff(want, b.String()))
	}
	return surfaces
}

// decodeMessages reads the JSON-RPC messages of a `client` file: JSON
// values one after the other.
func decodeMessages(t *testing.T, data []byte) []jsonrpc.Message {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	var out []jsonrpc.Message
	for dec.More() {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("client messages: %v", err)
		}
		m, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			t.Fatalf("client message %s: %v", raw, err)
		}
		out = append(out, m)
	}
	return out
}

var (
	// measured fields of responses, also inside JSON texts (quotes escaped)
	measuredField = regexp.MustCompile(`(\\?"(?:timeMs|durationMs|DurationMs)\\?":\s*)\d+`)
	// durations in Render's text ("[log 3ms]", "calc/add 12ms")
	measuredText = regexp.MustCompile(`\b\d+ms\b`)
)

// scrub writes what is measured while running as 0.
func scrub(b []byte) []byte {
	b = measuredField.ReplaceAll(b, []byte("${1}0"))
	return measuredText.ReplaceAll(b, []byte("0ms"))
}

// lineDiff shows the first lines where want and got differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\n  want: %s\n  got:  %s", i+1, wl, gl)
		}
	}
	return "(equal)"
}
