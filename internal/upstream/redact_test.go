package upstream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/redact"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

const doorSecret = "sk-door-0123456789abcdef"

// Everything a server sends comes out of the Manager redacted: the
// snapshot (tools, instructions, serverInfo), resource and prompt lists,
// resource contents, prompts, tool results (text, structured, isError) and
// errors. Nothing downstream (declarations, search, surfaces, scripts)
// ever holds the secret, so no later clip can cut it in two.
func TestEverythingFromAServerIsRedacted(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			cfg, opts := tr.serve(t, testutil.LeakyServer(doorSecret), nil)
			cfg.Secrets = []string{doorSecret}
			m, _ := newManager(t, []config.Server{cfg}, opts)
			ctx := testutil.Context(t)

			var got []any
			add := func(what string, v any, err error) {
				t.Helper()
				if err != nil && what != "reject" {
					t.Fatalf("%s: %v", what, err)
				}
				got = append(got, v)
				if err != nil {
					got = append(got, err.Error())
				}
			}
			snap, err := m.Snapshot(ctx, "s")
			add("snapshot", snap, err)
			if snap != nil && len(snap.Tools) > 0 && tr.name != "memory" && tr.name != "memory-2025-11-25" {
				if _, raw := snap.Tools[0].InputSchema.(json.RawMessage); !raw {
					t.Errorf("a redacted schema is no longer the server's raw JSON: %T", snap.Tools[0].InputSchema)
				}
			}
			rs, err := m.ListResources(ctx, "s")
			add("resources", rs, err)
			rt, err := m.ListResourceTemplates(ctx, "s")
			add("templates", rt, err)
			ps, err := m.ListPrompts(ctx, "s")
			add("prompts", ps, err)
			rr, err := m.ReadResource(ctx, "s", "leak://key")
			add("read", rr, err)
			gp, err := m.GetPrompt(ctx, "s", "login", nil)
			add("get prompt", gp, err)
			for _, tool := range []string{"leak", "fail", "binary"} {
				res, err := m.CallTool(ctx, "s", tool, nil)
				add(tool, res, err)
				// Binary data is base64 in JSON: look in the bytes.
				for _, c := range res.Content {
					var data []byte
					switch c := c.(type) {
					case *mcp.ImageContent:
						data = c.Data
					case *mcp.AudioContent:
						data = c.Data
					case *mcp.EmbeddedResource:
						data = c.Resource.Blob
					}
					if strings.Contains(string(data), doorSecret) {
						t.Errorf("%s: the secret is in binary data: %q", tool, data)
					}
				}
			}
			for _, c := range rr.Contents {
				if strings.Contains(string(c.Blob), doorSecret) {
					t.Errorf("resource blob: %q", c.Blob)
				}
			}
			res, err := m.CallTool(ctx, "s", "reject", nil)
			if err == nil {
				t.Fatalf("reject: no error, result %s", mustJSON(t, res))
			}
			add("reject", res, err)
			out := mustJSON(t, got)
			if strings.Contains(out, doorSecret) || strings.Contains(out, "0123456789abcdef") {
				t.Fatalf("the secret came through: %s", out)
			}
			if n := strings.Count(out, redact.Marker); n < 20 {
				t.Errorf("only %d redactions in %s", n, out)
			}
		})
	}
}

// A stdio server inherits only the default variables of the gateway's
// environment: a tool that prints its environment cannot hand the model the
// gateway's AWS key. inheritEnv widens it, and what it lets through under a
// secret's name is redacted.
func TestMinimalInheritedEnvironment(t *testing.T) {
	const awsKey = "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY"
	t.Setenv("AWS_SECRET_ACCESS_KEY", awsKey)
	t.Setenv("CODEMODE_TEST_PLAIN", "plain-value")
	t.Setenv("CODEMODE_TEST_FUNC", "() { echo hi; }")
	t.Setenv(config.AuthTokenEnv, "gateway-token-123456")
	all := helperServer(t, "all", "server")
	all.InheritEnv = []string{"*"}
	some := helperServer(t, "some", "server")
	some.InheritEnv = []string{"AWS_*", "CODEMODE_TEST_PLAIN"}
	m, _ := newManager(t, []config.Server{helperServer(t, "default", "server"), all, some}, nil)
	get := func(id, name string) string {
		v, _, _ := strings.Cut(call(t, m, id, "env", map[string]any{"name": name}), "|")
		return v
	}
	for _, tc := range []struct{ id, name, want string }{
		{"default", "AWS_SECRET_ACCESS_KEY", ""},
		{"default", "CODEMODE_TEST_PLAIN", ""},
		{"default", "PATH", os.Getenv("PATH")},
		{"all", "AWS_SECRET_ACCESS_KEY", redact.Marker},
		{"all", "CODEMODE_TEST_PLAIN", "plain-value"},
		{"all", "CODEMODE_TEST_FUNC", ""},
		{"all", config.AuthTokenEnv, ""},
		{"some", "AWS_SECRET_ACCESS_KEY", redact.Marker},
		{"some", "CODEMODE_TEST_PLAIN", "plain-value"},
		{"some", "HOME", os.Getenv("HOME")},
	} {
		if got := get(tc.id, tc.name); got != tc.want {
			t.Errorf("%s sees %s=%q, want %q", tc.id, tc.name, got, tc.want)
		}
	}
	// A server that finds the gateway's key some other way (its
	// /proc/<ppid>/environ, a credentials file) still shows it redacted.
	if got := call(t, m, "default", "echo", map[string]any{"text": "found " + awsKey}); got != "found "+redact.Marker {
		t.Errorf("echo of the gateway's key: %q", got)
	}
}

func TestChildEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "HOME=/h", "AWS_SECRET_ACCESS_KEY=k", "NPM_CONFIG_CACHE=/c", "BASH_FUNC_x%%=() { :; }", "X=1", "CODEMODE_AUTH_TOKEN=t"}
	for _, tc := range []struct {
		inherit []string
		env     map[string]string
		want    string
	}{
		{nil, nil, "PATH=/bin HOME=/h"},
		{nil, map[string]string{"HOME": "/o", "A": "b"}, "PATH=/bin HOME=/h A=b HOME=/o"},
		{[]string{"NPM_CONFIG_*", "X"}, nil, "PATH=/bin HOME=/h NPM_CONFIG_CACHE=/c X=1"},
		{[]string{"*"}, nil, "PATH=/bin HOME=/h AWS_SECRET_ACCESS_KEY=k NPM_CONFIG_CACHE=/c X=1"},
		{[]string{"CODEMODE_AUTH_TOKEN"}, nil, "PATH=/bin HOME=/h CODEMODE_AUTH_TOKEN=t"},
	} {
		got := strings.Join(childEnv(environ, config.Server{InheritEnv: tc.inherit, Env: tc.env}), " ")
		if got != tc.want {
			t.Errorf("inheritEnv %q env %v: %q, want %q", tc.inherit, tc.env, got, tc.want)
		}
	}
}

// straddle returns text of about n bytes in which the secret starts at
// byte at (so that a cut at any offset inside it splits it), written in
// characters the secret does not use.
func straddle(n, at int, secret string) string {
	filler := strings.Repeat("log line of the server ", n/23+2)
	s := filler[:at] + secret + filler
	return s[:n]
}

// secretChars is a secret whose characters the filler never uses, so that
// any one of them left in an output is a leak.
const secretChars = "QWZXYJKVG#%@^&*+=~|"

func leakedChars(out string) bool {
	return strings.ContainsAny(strings.ReplaceAll(out, redact.Marker, ""), secretChars)
}

// The stderr ring keeps the last 4 KiB; a secret straddling the start of
// what it kept (its first part was dropped) leaves nothing of itself in
// the tail, nor in the 1,024 bytes an error message repeats of it.
func TestStderrTailRedactedAcrossTheCut(t *testing.T) {
	r := redact.New([]string{secretChars})
	for total := tailSize; total < tailSize+len(secretChars)+2; total++ {
		for _, at := range []int{total - tailSize - len(secretChars) + 1, total - tailSize - 1, total - maxTailInMessage - 3, total - len(secretChars)/2} {
			if at < 0 {
				continue
			}
			s := newStderrSink(slog.New(slog.NewTextHandler(io.Discard, nil)), r)
			text := straddle(total, at, secretChars)
			// In pieces, as a pipe delivers it.
			for i := 0; i < len(text); i += 1000 {
				s.Write([]byte(text[i:min(i+1000, len(text))]))
			}
			tail := s.Tail()
			e := &Error{ServerID: "x", Kind: Died, Err: fmt.Errorf("exit status 1"), StderrTail: tail}
			if leakedChars(tail) || leakedChars(e.Error()) {
				t.Fatalf("total %d, secret at %d: tail %q\nerror %q", total, at, tail, e.Error())
			}
		}
	}
}

// A server that dies printing its key on stderr: the error carries the
// tail, redacted.
func TestStderrSecretRedactedInErrors(t *testing.T) {
	t.Parallel()
	s := helperServer(t, "h", "server")
	s.Secrets = []string{"sk-stderr-0123456789"}
	m, _ := newManager(t, []config.Server{s}, nil)
	ctx := testutil.Context(t)
	_, err := m.CallTool(ctx, "h", "crash-with", map[string]any{"text": straddle(5000, 5000-tailSize-5, "sk-stderr-0123456789") + "\nkey sk-stderr-0123456789 rejected"})
	if err == nil {
		t.Fatal("no error")
	}
	e := asError(t, err, "h", Died)
	if strings.Contains(err.Error()+e.StderrTail, "0123456789") || !strings.Contains(e.StderrTail, redact.Marker) {
		t.Fatalf("error %q\ntail %q", err, e.StderrTail)
	}
}

// A 401 body is quoted up to 512 bytes; a secret straddling the cut leaves
// nothing of itself, wherever the cut falls in it.
func TestAuthBodyRedactedAcrossTheCut(t *testing.T) {
	r := redact.New([]string{secretChars})
	for at := maxAuthBody - len(secretChars) - 1; at <= maxAuthBody+1; at++ {
		body := straddle(maxAuthBody+200, at, secretChars)
		tr := &headerTransport{redact: r, base: roundTrip(func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 401, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}, nil
		})}
		req := httptest.NewRequest("POST", "https://x.example/mcp", nil)
		_, err := tr.RoundTrip(req)
		if err == nil || leakedChars(err.Error()) {
			t.Fatalf("secret at %d: %v", at, err)
		}
	}
}

// End to end: a remote server that answers 401 with a body echoing the
// token, on a URL whose path holds another.
func TestAuthErrorRedacted(t *testing.T) {
	t.Parallel()
	const token, pathToken = "tok-0123456789abcdef", "Xy12ab34Cd56ef78Gh90"
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(401)
		fmt.Fprintf(w, "%s invalid token %s for %s", strings.Repeat("x", 500), token, r.URL.Path)
	}))
	t.Cleanup(hs.Close)
	u := hs.URL + "/" + pathToken + "/mcp"
	cfg, err := config.Parse("c.json", []byte(`{"mcpServers":{"r":{"url":"`+u+`","headers":{"Authorization":"Bearer `+token+`"}}}}`), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	m, _ := newManager(t, cfg.Servers, nil)
	ctx := testutil.Context(t)
	_, err = m.Snapshot(ctx, "r")
	if err == nil {
		t.Fatal("no error")
	}
	e := asError(t, err, "r", Auth)
	all := err.Error() + e.Hint + m.Status("r").Err.Error()
	if strings.Contains(all, "0123456789") || strings.Contains(all, pathToken) || strings.Contains(all, "tok-") {
		t.Fatalf("error %q", all)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// The cost of redacting tool results at the door: a configured secret that
// does not occur in the result (the usual case) costs one JSON encoding of
// it and a scan; none configured costs nothing.
func BenchmarkCallToolRedaction(b *testing.B) {
	for _, size := range []int{16, 64 << 10, 1 << 20} {
		for _, secrets := range []int{0, 1, 10} {
			b.Run(fmt.Sprintf("result=%d/secrets=%d", size, secrets), func(b *testing.B) {
				payload := strings.Repeat("lorem ipsum ", size/12+1)[:size]
				srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
				srv.AddTool(&mcp.Tool{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
					return text(payload), nil
				})
				cfg := config.Server{ID: "s", Name: "s"}
				for i := range secrets {
					cfg.Secrets = append(cfg.Secrets, fmt.Sprintf("sk-bench-%02d-0123456789", i))
				}
				m := New([]config.Server{cfg}, &Options{Dial: DialInMemory(map[string]*mcp.Server{"s": srv})})
				defer m.Close()
				ctx := context.Background()
				if _, err := m.Snapshot(ctx, "s"); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(size))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := m.CallTool(ctx, "s", "a", nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// The fast path of result redaction passes only results it can read whole
// and that hold no secret; wherever else a secret hides, the result goes
// through the full redaction.
func TestResultFastPath(t *testing.T) {
	const secret = "123456789012"
	r := redact.New([]string{secret})
	m := &Manager{redact: r}
	for _, tc := range []struct {
		name  string
		res   *mcp.CallToolResult
		clean bool
	}{
		{"plain", &mcp.CallToolResult{Meta: mcp.Meta{"server": "x"}, Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}, StructuredContent: map[string]any{"a": []any{1.5, "b", nil, true}}}, true},
		{"text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "k=" + secret}}}, false},
		{"meta", &mcp.CallToolResult{Meta: mcp.Meta{"k": []any{secret}}}, false},
		{"annotation", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok", Annotations: &mcp.Annotations{LastModified: secret}}}}, false},
		{"key", &mcp.CallToolResult{StructuredContent: map[string]any{"x" + secret: 1.0}}, false},
		{"number", &mcp.CallToolResult{StructuredContent: map[string]any{"n": 123456789012.0}}, false},
		{"image", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{Data: []byte("x"), MIMEType: "image/png"}}}, false},
	} {
		if got := resultClean(r, tc.res); got != tc.clean {
			t.Errorf("%s: clean = %v, want %v", tc.name, got, tc.clean)
		}
		out, _ := redactResult(m, tc.res, nil)
		if b := mustJSON(t, out); strings.Contains(b, secret) {
			t.Errorf("%s: %s", tc.name, b)
		}
		if tc.clean && out != tc.res {
			t.Errorf("%s: a clean result was copied", tc.name)
		}
	}
}

// The redaction step alone, on a result that holds no secret: the fast
// path's scan, and the JSON round trip it avoids.
func BenchmarkRedactResult(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		res := text(strings.Repeat("lorem ipsum ", size/12+1)[:size])
		for _, secrets := range []int{1, 10} {
			var list []string
			for i := range secrets {
				list = append(list, fmt.Sprintf("sk-bench-%02d-0123456789", i))
			}
			m := &Manager{redact: redact.New(list)}
			b.Run(fmt.Sprintf("result=%d/secrets=%d/scan", size, secrets), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					redactResult(m, res, nil)
				}
			})
			b.Run(fmt.Sprintf("result=%d/secrets=%d/roundtrip", size, secrets), func(b *testing.B) {
				b.SetBytes(int64(size))
				for b.Loop() {
					redactOut(m, res, nil)
				}
			})
		}
	}
}

// The gateway logs what a server writes on stderr, line by line, and a line
// longer than maxLogLine in pieces: no piece quotes a secret, nor the part
// of one that a cut between two pieces split.
func TestStderrLogRedacted(t *testing.T) {
	t.Parallel()
	r := redact.New([]string{secretChars})
	for _, at := range []int{0, 10, maxLogLine - len(secretChars) + 1, maxLogLine - 1, 2*maxLogLine - 7} {
		var logs syncBuffer
		s := newStderrSink(slog.New(slog.NewJSONHandler(&logs, nil)), r)
		s.Write([]byte("starting with key " + secretChars + "\n"))
		s.Write([]byte(straddle(3*maxLogLine, at, secretChars) + "\n"))
		s.Write([]byte("exiting " + secretChars[:9]))
		s.Write([]byte(secretChars[9:]))
		s.flush()
		out := logs.String()
		if n := strings.Count(out, redact.Marker); n < 3 {
			t.Errorf("secret at %d: %d markers in the log", at, n)
		}
		for _, rec := range strings.Split(strings.TrimSpace(out), "\n") {
			var v struct{ Line string }
			if err := json.Unmarshal([]byte(rec), &v); err != nil {
				t.Fatal(err)
			}
			if leakedChars(v.Line) {
				t.Fatalf("secret at %d: a logged line quotes it: %.300q", at, v.Line)
			}
		}
	}
}

// recordingForwarder answers every request, recording what it was asked
// as JSON.
type recordingForwarder struct {
	mu    sync.Mutex
	asked []string
}

func (f *recordingForwarder) ClientCapabilities() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}, Sampling: &mcp.SamplingCapabilities{}}
}
func (f *recordingForwarder) Peer() any { return f }
func (f *recordingForwarder) record(v any) {
	b, _ := json.Marshal(v)
	f.mu.Lock()
	f.asked = append(f.asked, string(b))
	f.mu.Unlock()
}
func (f *recordingForwarder) ForwardElicit(_ context.Context, _ string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	f.record(p)
	return &mcp.ElicitResult{Action: "decline"}, nil
}
func (f *recordingForwarder) ForwardSampling(_ context.Context, _ string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	f.record(p)
	return &mcp.CreateMessageResult{Model: "m", Role: "assistant", Content: &mcp.TextContent{Text: "ok"}}, nil
}
func (f *recordingForwarder) ForwardRoots(context.Context, string) (*mcp.ListRootsResult, error) {
	return &mcp.ListRootsResult{}, nil
}

// What an upstream asks the run's client (elicitation, sampling: shown to
// its user, or sent to its model) is redacted everywhere, not only in the
// message: the requested schema's titles, descriptions, defaults and enum
// values, a sampling request's system prompt, image data, stop sequences,
// model hints and metadata. Only the message and the text of the messages
// were, and nothing of a sampling request made as a task's input request.
func TestForwardedRequestsAreRedacted(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "asker", Version: "1"}, nil)
	elicit := &mcp.ElicitParams{Message: "key " + doorSecret, RequestedSchema: json.RawMessage(`{"type":"object","title":"` + doorSecret + `",` +
		`"properties":{"k":{"type":"string","description":"` + doorSecret + `","default":"` + doorSecret + `","enum":["` + doorSecret + `"]}}}`)}
	sample := &mcp.CreateMessageParams{MaxTokens: 5, SystemPrompt: "use " + doorSecret, StopSequences: []string{doorSecret},
		Metadata: map[string]any{"key": doorSecret}, ModelPreferences: &mcp.ModelPreferences{Hints: []*mcp.ModelHint{{Name: doorSecret}}},
		Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: doorSecret}},
			{Role: "user", Content: &mcp.ImageContent{MIMEType: "image/png", Data: []byte("png " + doorSecret)}}}}
	srv.AddTool(&mcp.Tool{Name: "ask", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if _, err := req.Session.Elicit(ctx, elicit); err != nil {
			return nil, err
		}
		if _, err := req.Session.CreateMessage(ctx, sample); err != nil {
			return nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "asked"}}}, nil
	})
	cfg := config.Server{ID: "s", Name: "s", Secrets: []string{doorSecret}}
	m, _ := newManager(t, []config.Server{cfg}, &Options{Dial: DialInMemory(map[string]*mcp.Server{"s": srv}), ProtocolVersion: "2025-11-25"})
	f := &recordingForwarder{}
	ctx := WithForwarder(testutil.Context(t), f)
	if _, err := m.CallTool(ctx, "s", "ask", nil); err != nil {
		t.Fatal(err)
	}
	// A 2026-07-28 task's input requests, as the tasks extension sends them.
	inputs := map[string]json.RawMessage{
		"e": json.RawMessage(`{"method":"elicitation/create","params":` + mustJSON(t, elicit) + `}`),
		"s": json.RawMessage(`{"method":"sampling/createMessage","params":` + mustJSON(t, sample) + `}`),
	}
	if _, err := m.byID["s"].answerInputs(ctx, inputs); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.asked) != 4 {
		t.Fatalf("the client was asked %d times, want 4: %q", len(f.asked), f.asked)
	}
	b64 := base64.StdEncoding.EncodeToString([]byte("png " + doorSecret))
	for _, a := range f.asked {
		if strings.Contains(a, doorSecret) || strings.Contains(a, "0123456789abcdef") || strings.Contains(a, b64) {
			t.Errorf("the client was asked %s", a)
		}
		if !strings.Contains(a, redact.Marker) {
			t.Errorf("nothing was redacted in %s", a)
		}
	}
}
