// Package proxy is a completion-API proxy that gives any OpenAI-compatible
// client code orchestration over its own tools, without a sandbox of its
// own and without handing its tools to anyone: `codemode proxy`.
//
// Start with [New] and [Proxy.Handler]. The proxy serves
// POST /v1/chat/completions and forwards to an upstream OpenAI-compatible
// endpoint. When the client's request has tools, the model is offered one
// function instead, execute_code, whose description carries the
// TypeScript declarations of the client's tools (replay.Declarations).
// When the model calls it, the proxy turns the call into a code message
// and steps it (package replay): the client gets back an ordinary
// assistant message with tool calls of its own tools, plus, in the field
// "code_message", the code message it must keep in its history (send the
// assistant message back unchanged); it answers them with ordinary tool
// messages; the proxy reruns the code with the results, until the code
// result, which goes to the model as execute_code's result, and the
// model's answer goes to the client. The proxy keeps no state: everything
// is in the client's message history.
//
// What the model sees of a code block is rebuilt from that history on
// every request: one assistant message calling execute_code (its id is the
// code message's id) and one tool message with the code result; the
// client's tool calls and results inside the block never reach it.
// Streaming (`stream: true`) passes the model's text through as it comes;
// a response that asks for the client's tools is then one synthesized
// chunk with the tool calls and code_message, and a finish chunk.
//
// Limits: one execute_code call per model response is run (further ones
// are dropped, as if the model had not made them); a code block that
// needs no client tool runs to its result within the request, and only
// the model's final answer reaches the client (that block is not in the
// client's history, so later turns do not show it to the model).
package proxy

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/codemode-mcp/codemode/internal/replay"
)

// ToolName is the one function the model is offered.
const ToolName = "execute_code"

// CodeMessageField is the field of an assistant message in which the
// proxy hands the client the code message the client must keep.
const CodeMessageField = "code_message"

// Options configure a Proxy. Upstream is required.
type Options struct {
	// Upstream is the upstream API's base URL (".../v1"), or its chat
	// completions URL.
	Upstream string
	// Model, if set, replaces the model of every request.
	Model string
	// APIKey, if set, is sent upstream as a bearer token; otherwise the
	// client's Authorization header is forwarded (when AuthToken is not
	// set: then the client's header carries the proxy's token).
	APIKey string
	// AuthToken, if set, is required from clients as a bearer token.
	AuthToken string
	// Stepper runs the code; default replay.New(nil).
	Stepper *replay.Stepper
	// Client calls the upstream; default http.DefaultClient.
	Client *http.Client
	Logger *slog.Logger
	// MaxModelCalls bounds the model calls one client request may make
	// (each code result goes back to the model). Default 8.
	MaxModelCalls int
	// Now is the clock that code messages start at. Default time.Now.
	Now func() time.Time
}

// Proxy is the completion-API proxy. It is safe for concurrent use.
type Proxy struct {
	opts     Options
	endpoint string
}

// New returns a Proxy, or an error naming what is wrong with opts.
func New(opts *Options) (*Proxy, error) {
	p := &Proxy{}
	if opts != nil {
		p.opts = *opts
	}
	u, err := url.Parse(p.opts.Upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--upstream %q: want the base URL of an OpenAI-compatible API, e.g. https://api.openai.com/v1", p.opts.Upstream)
	}
	p.endpoint = strings.TrimRight(p.opts.Upstream, "/")
	if !strings.HasSuffix(p.endpoint, "/chat/completions") {
		p.endpoint += "/chat/completions"
	}
	if p.opts.Stepper == nil {
		p.opts.Stepper = replay.New(nil)
	}
	if p.opts.Client == nil {
		p.opts.Client = http.DefaultClient
	}
	if p.opts.Logger == nil {
		p.opts.Logger = slog.New(slog.DiscardHandler)
	}
	if p.opts.MaxModelCalls <= 0 {
		p.opts.MaxModelCalls = 8
	}
	if p.opts.Now == nil {
		p.opts.Now = time.Now
	}
	return p, nil
}

// maxBody bounds a client's request.
const maxBody = 16 << 20

// maxAnswer bounds the upstream API's answer (one event of a streamed one).
const maxAnswer = 16 << 20

// Handler serves POST /v1/chat/completions (and /chat/completions).
func (p *Proxy) Handler() http.Handler {
	mux := http.NewServeMux()
	h := p.guard(http.MaxBytesHandler(http.HandlerFunc(p.serveCompletions), maxBody))
	mux.Handle("/v1/chat/completions", h)
	mux.Handle("/chat/completions", h)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		apiError(w, http.StatusNotFound, "codemode proxy serves POST /v1/chat/completions only", "not_found")
	})
	return mux
}

// guard refuses browsers of other sites (a request with a foreign Origin),
// DNS rebinding (a foreign Host without a token: a page that rebinds its
// name to 127.0.0.1 cannot send the token) and requests without the token.
// A page must not spend the upstream key the proxy holds.
func (p *Proxy) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" {
			if u, err := url.Parse(o); err != nil || !loopback(u.Hostname()) {
				apiError(w, http.StatusForbidden, "requests from a browser page of another site are refused (Origin "+o+")", "forbidden")
				return
			}
		}
		if p.opts.AuthToken == "" {
			host := r.Host
			if h, _, err := net.SplitHostPort(host); err == nil {
				host = h
			}
			if !loopback(host) {
				apiError(w, http.StatusForbidden, "Host "+r.Host+" is not this machine; start the proxy with --auth-token to serve other hosts", "forbidden")
				return
			}
		}
		if t := p.opts.AuthToken; t != "" {
			scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(got), []byte(t)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="codemode"`)
				apiError(w, http.StatusUnauthorized, "send Authorization: Bearer <the proxy's token>", "invalid_api_key")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// apiError answers in OpenAI's error shape, which clients know how to show.
func apiError(w http.ResponseWriter, status int, msg, code string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(replay.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "invalid_request_error", "code": code}}))
}

// request is a client's chat completion request: every field kept as sent
// (so that temperature, response_format and the rest reach the model), the
// ones the proxy reads decoded.
type request struct {
	fields   map[string]json.RawMessage
	messages []json.RawMessage
	tools    []replay.Tool
	stream   bool
	model    string
}

func (p *Proxy) serveCompletions(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		apiError(w, http.StatusMethodNotAllowed, "POST a chat completion request", "method_not_allowed")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			apiError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request is larger than %d bytes", tooBig.Limit), "request_too_large")
			return
		}
		apiError(w, http.StatusBadRequest, "reading the request: "+err.Error(), "invalid_request")
		return
	}
	req, err := parseRequest(body)
	if err != nil {
		apiError(w, http.StatusBadRequest, err.Error(), "invalid_request")
		return
	}
	if p.opts.Model != "" {
		req.model = p.opts.Model
		req.fields["model"] = replay.Marshal(p.opts.Model)
	}
	auth := r.Header.Get("Authorization")
	if p.opts.AuthToken != "" {
		auth = "" // the client's header carries the proxy's own token
	}
	if p.opts.APIKey != "" {
		auth = "Bearer " + p.opts.APIKey
	}
	c := &conversation{p: p, req: req, auth: auth, ctx: r.Context(), w: w}
	c.serve()
}

func parseRequest(body []byte) (*request, error) {
	req := &request{}
	if err := json.Unmarshal(body, &req.fields); err != nil || req.fields == nil {
		return nil, errors.New("the body is not a JSON chat completion request")
	}
	if err := json.Unmarshal(req.fields["messages"], &req.messages); err != nil || len(req.messages) == 0 {
		return nil, errors.New("messages must be a non-empty array")
	}
	if raw, ok := req.fields["tools"]; ok && !isNull(raw) {
		if err := json.Unmarshal(raw, &req.tools); err != nil {
			return nil, fmt.Errorf("tools: %v", err)
		}
	}
	json.Unmarshal(req.fields["stream"], &req.stream)
	json.Unmarshal(req.fields["model"], &req.model)
	return req, nil
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || bytes.Equal(raw, []byte("null"))
}

// conversation serves one client request.
type conversation struct {
	p    *Proxy
	req  *request
	auth string
	ctx  context.Context
	w    http.ResponseWriter

	decls string
	// model is what the model sees: the client's messages with each code
	// block folded into an execute_code call and its result.
	model []json.RawMessage
	// sse is set once a streamed response to the client has begun.
	sse *sseWriter
}

func (c *conversation) serve() {
	if len(c.req.tools) == 0 {
		c.passThrough() // nothing to orchestrate
		return
	}
	decls, err := replay.Declarations(c.req.tools)
	if err != nil {
		apiError(c.w, http.StatusBadRequest, "tools: "+err.Error(), "invalid_request")
		return
	}
	c.decls = decls
	open, err := c.fold()
	if err != nil {
		apiError(c.w, http.StatusBadRequest, err.Error(), "invalid_request")
		return
	}
	if open != nil {
		// The last code block waits for the client's tools.
		c.answerCalls(open.code, open.next, json.RawMessage("null"), nil)
		return
	}
	c.loop()
}

// block is a code block found in the client's history.
type block struct {
	code    replay.Message
	content json.RawMessage // of the first assistant message: the model's text
	msgs    []replay.Message
	next    replay.Message // the step's answer
}

// fold rewrites the client's history for the model, stepping every code
// block to its result. A block still waiting for the client's tools at the
// end of the history is returned.
func (c *conversation) fold() (*block, error) {
	msgs := c.req.messages
	for i := 0; i < len(msgs); {
		code, content, ok := codeMessage(msgs[i])
		if !ok {
			c.model = append(c.model, msgs[i])
			i++
			continue
		}
		b := &block{code: code, content: content, msgs: []replay.Message{code}}
		j := i
		for ; j < len(msgs); j++ {
			var m replay.Message
			if err := json.Unmarshal(msgs[j], &m); err != nil {
				return nil, fmt.Errorf("messages[%d]: %v", j, err)
			}
			if m.Role == replay.RoleAssistant {
				if other, _, ok := codeMessage(msgs[j]); !ok || other.ID != code.ID {
					break
				}
			} else if m.Role != replay.RoleTool {
				break
			}
			b.msgs = append(b.msgs, m)
		}
		resp, err := c.p.opts.Stepper.Step(c.ctx, replay.Request{Messages: b.msgs, Tools: c.req.tools})
		if err != nil {
			return nil, fmt.Errorf("the code block at messages[%d] (code %q): %v", i, code.ID, err)
		}
		b.next = resp.Message
		if resp.Message.Role == replay.RoleAssistant {
			if j == len(msgs) {
				return b, nil
			}
			// Abandoned: the client went on without answering.
			resp.Message = replay.Message{Role: replay.RoleCodeResult, ID: code.ID, Result: &replay.CodeResult{Status: "error",
				Error: &replay.ErrorInfo{Name: "Abandoned", Message: "the client did not answer the code's tool calls"}}}
		}
		c.model = append(c.model, executeCall(code, content), codeResultMessage(code.ID, resp))
		i = j
	}
	return nil, nil
}

// codeMessage reads the code message an assistant message carries.
func codeMessage(raw json.RawMessage) (replay.Message, json.RawMessage, bool) {
	var m struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Code    *replay.Message `json:"code_message"`
	}
	if json.Unmarshal(raw, &m) != nil || m.Role != replay.RoleAssistant || m.Code == nil || m.Code.Role != replay.RoleCode || m.Code.ID == "" {
		return replay.Message{}, nil, false
	}
	return *m.Code, m.Content, true
}

// executeCall is the model's side of a code block: its call of
// execute_code, whose id is the code's.
func executeCall(code replay.Message, content json.RawMessage) json.RawMessage {
	if isNull(content) {
		content = json.RawMessage("null")
	}
	return replay.Marshal(map[string]any{"role": "assistant", "content": content, "tool_calls": []any{map[string]any{
		"id": code.ID, "type": "function", "function": map[string]any{"name": ToolName, "arguments": string(replay.Marshal(map[string]string{"code": code.Code}))},
	}}})
}

// codeResultMessage is execute_code's result as the model reads it: the
// code result (status, and data or error), and the console output if any.
func codeResultMessage(id string, resp replay.Response) json.RawMessage {
	out := map[string]any{"status": "error"}
	if r := resp.Message.Result; r != nil {
		out["status"] = r.Status
		if r.Status == "success" {
			out["data"] = r.Data
		} else {
			out["error"] = r.Error
		}
	}
	if len(resp.Logs) > 0 {
		var logs []string
		for _, l := range resp.Logs {
			logs = append(logs, string(l.Level)+": "+l.Message)
		}
		out["logs"] = logs
	}
	return replay.Marshal(map[string]any{"role": "tool", "tool_call_id": id, "content": string(replay.Marshal(out))})
}

// description is execute_code's description: how to write the code, and
// the declarations of the client's tools.
func (c *conversation) description() string {
	return "Run JavaScript or TypeScript that calls the tools declared below and returns a value; only that value (and console output) comes back to you, not each call's result. " +
		"The tools are async functions, available as globals (and as exports of \"" + replay.ClientModule + "\"): await them, and use Promise.all for calls that do not depend on each other. " +
		"End with `return <value>` (JSON data). A failed call throws ToolCallError. The sandbox has no network or filesystem of its own.\n```ts\n" + c.decls + "```"
}

var executeParams = json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"the script: statements ending with return <value>, or an async arrow function"}},"required":["code"]}`)

// upstreamBody is the request to the model: the client's, with the
// folded messages and execute_code for tools.
func (c *conversation) upstreamBody() []byte {
	f := make(map[string]json.RawMessage, len(c.req.fields))
	for k, v := range c.req.fields {
		f[k] = v
	}
	f["messages"] = replay.Marshal(c.model)
	f["tools"] = replay.Marshal([]any{map[string]any{"type": "function", "function": map[string]any{
		"name": ToolName, "description": c.description(), "parameters": executeParams}}})
	if raw, ok := f["tool_choice"]; ok {
		var s string
		if json.Unmarshal(raw, &s) != nil { // a specific client tool: code that calls it
			f["tool_choice"] = replay.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": ToolName}})
		}
	}
	delete(f, "parallel_tool_calls")
	return replay.Marshal(f)
}

// post sends body upstream.
func (c *conversation) post(body []byte) (*http.Response, error) {
	hr, err := http.NewRequestWithContext(c.ctx, http.MethodPost, c.p.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.auth != "" {
		hr.Header.Set("Authorization", c.auth)
	}
	if c.req.stream {
		hr.Header.Set("Accept", "text/event-stream")
	}
	return c.p.opts.Client.Do(hr)
}

// passThrough forwards the request as it is and copies the answer back.
func (c *conversation) passThrough() {
	resp, err := c.post(replay.Marshal(c.req.fields))
	if err != nil {
		apiError(c.w, http.StatusBadGateway, "the upstream API did not answer: "+err.Error(), "upstream_unavailable")
		return
	}
	defer resp.Body.Close()
	copyResponse(c.w, resp)
}

func copyResponse(w http.ResponseWriter, resp *http.Response) {
	for _, k := range []string{"Content-Type", "Cache-Control"} {
		if v := resp.Header.Get(k); v != "" {
			w.Header().Set(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	f, _ := w.(http.Flusher)
	buf := make([]byte, 16<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
			if f != nil {
				f.Flush()
			}
		}
		if err != nil {
			return
		}
	}
}

// modelTurn is what one model response asked for.
type modelTurn struct {
	id, model string
	content   json.RawMessage // the assistant message's content
	call      *toolCall       // the first execute_code call, if any
	usage     json.RawMessage
}

type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// loop asks the model, runs the code it writes, and gives the results back
// to it, until the model answers or the code needs the client's tools.
func (c *conversation) loop() {
	for range c.p.opts.MaxModelCalls {
		turn, done := c.ask()
		if done {
			return
		}
		code := c.codeFor(turn)
		resp, err := c.p.opts.Stepper.Step(c.ctx, replay.Request{Messages: []replay.Message{code}, Tools: c.req.tools})
		if err != nil {
			resp = replay.Response{Message: replay.Message{Role: replay.RoleCodeResult, ID: code.ID, Result: &replay.CodeResult{Status: "error",
				Error: &replay.ErrorInfo{Name: "InvalidArguments", Message: err.Error(), Hint: `call execute_code with {"code": "<script>"}`}}}}
		}
		if resp.Message.Role == replay.RoleAssistant {
			c.answerCalls(code, resp.Message, turn.content, turn)
			return
		}
		c.model = append(c.model, executeCall(code, turn.content), codeResultMessage(code.ID, resp))
	}
	c.fail(http.StatusBadGateway, fmt.Sprintf("the model called %s %d times in one request without answering", ToolName, c.p.opts.MaxModelCalls))
}

// codeFor makes the code message of the model's execute_code call.
func (c *conversation) codeFor(turn *modelTurn) replay.Message {
	var args struct {
		Code string `json:"code"`
	}
	if json.Unmarshal([]byte(turn.call.Function.Arguments), &args) != nil || strings.TrimSpace(args.Code) == "" {
		// Some models send the code itself rather than {"code": ...}.
		args.Code = turn.call.Function.Arguments
	}
	id := turn.call.ID
	if id == "" {
		sum := sha256.Sum256([]byte(args.Code))
		id = "code_" + hex.EncodeToString(sum[:6])
	}
	return replay.Message{Role: replay.RoleCode, ID: id, Code: args.Code, Now: replay.Marshal(c.p.opts.Now().UnixMilli())}
}

// fail reports an error to the client, in the stream if one has begun.
func (c *conversation) fail(status int, msg string) {
	c.p.opts.Logger.Warn("proxy request failed", "err", msg)
	if c.sse != nil {
		c.sse.event(replay.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "server_error"}}))
		c.sse.done()
		return
	}
	apiError(c.w, status, msg, "proxy_error")
}

// ask sends the conversation to the model. done means the client has its
// answer (the model's text, or an error); otherwise turn holds the
// model's execute_code call.
func (c *conversation) ask() (turn *modelTurn, done bool) {
	resp, err := c.post(c.upstreamBody())
	if err != nil {
		c.fail(http.StatusBadGateway, "the upstream API did not answer: "+err.Error())
		return nil, true
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		if c.sse != nil {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			c.fail(resp.StatusCode, fmt.Sprintf("the upstream API answered %s: %s", resp.Status, b))
			return nil, true
		}
		copyResponse(c.w, resp)
		return nil, true
	}
	if c.req.stream && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return c.askStream(resp.Body)
	}
	// As large as a streamed answer's event may be (askStream): an upstream
	// answering with gigabytes must not take the gateway's memory.
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		c.fail(http.StatusBadGateway, "reading the upstream answer: "+err.Error())
		return nil, true
	}
	if len(body) > maxAnswer {
		c.fail(http.StatusBadGateway, fmt.Sprintf("the upstream API's answer is larger than %d MiB", maxAnswer>>20))
		return nil, true
	}
	var cc struct {
		ID      string `json:"id"`
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content   json.RawMessage `json:"content"`
				ToolCalls []toolCall      `json:"tool_calls"`
			} `json:"message"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(body, &cc); err != nil || len(cc.Choices) == 0 {
		c.w.Header().Set("Content-Type", "application/json")
		c.w.Write(body) // not ours to understand: the client gets it as it is
		return nil, true
	}
	turn = &modelTurn{id: cc.ID, model: cc.Model, content: cc.Choices[0].Message.Content, usage: cc.Usage}
	for i := range cc.Choices[0].Message.ToolCalls {
		if tc := &cc.Choices[0].Message.ToolCalls[i]; tc.Function.Name == ToolName {
			turn.call = tc
			break
		}
	}
	if turn.call == nil {
		c.w.Header().Set("Content-Type", "application/json")
		c.w.Write(body) // the model's answer
		return nil, true
	}
	return turn, false
}

// answerCalls sends the client the calls of its tools that the code needs.
func (c *conversation) answerCalls(code replay.Message, next replay.Message, content json.RawMessage, turn *modelTurn) {
	if isNull(content) {
		content = json.RawMessage("null")
	}
	msg := map[string]any{"role": "assistant", "content": content, "tool_calls": next.ToolCalls, CodeMessageField: code}
	id, model := "chatcmpl-codemode-"+code.ID, c.req.model
	usage := json.RawMessage(`{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`)
	if turn != nil {
		if turn.id != "" {
			id = turn.id
		}
		if turn.model != "" {
			model = turn.model
		}
		if !isNull(turn.usage) {
			usage = turn.usage
		}
	}
	created := c.p.opts.Now().Unix()
	if c.req.stream {
		if c.sse == nil {
			c.sse = newSSE(c.w)
		}
		calls := make([]map[string]any, len(next.ToolCalls))
		for i, tc := range next.ToolCalls {
			calls[i] = map[string]any{"index": i, "id": tc.ID, "type": "function", "function": tc.Function}
		}
		delta := map[string]any{"role": "assistant", "tool_calls": calls, CodeMessageField: code}
		c.sse.event(replay.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": nil}}}))
		c.sse.event(replay.Marshal(map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": "tool_calls"}}}))
		c.sse.done()
		return
	}
	c.w.Header().Set("Content-Type", "application/json")
	c.w.Write(replay.Marshal(map[string]any{"id": id, "object": "chat.completion", "created": created, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "tool_calls"}}, "usage": usage}))
}

// askStream reads a streamed model response. Chunks without tool calls go
// to the client as they come; tool call deltas are gathered, and an
// execute_code call is returned to be run. The finish chunk and the
// stream's end are held back until it is known whether the model answered.
func (c *conversation) askStream(body io.Reader) (*modelTurn, bool) {
	if c.sse == nil {
		c.sse = newSSE(c.w)
	}
	turn := &modelTurn{}
	calls := map[int]*toolCall{}
	var content strings.Builder
	var held [][]byte
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), maxAnswer)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data:")
		if !ok {
			continue
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			break
		}
		var ch struct {
			ID      string `json:"id"`
			Model   string `json:"model"`
			Choices []struct {
				Delta struct {
					Content   *string `json:"content"`
					ToolCalls []struct {
						Index    int    `json:"index"`
						ID       string `json:"id"`
						Function struct {
							Name      string `json:"name"`
							Arguments string `json:"arguments"`
						} `json:"function"`
					} `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &ch) != nil {
			continue
		}
		turn.id, turn.model = ch.ID, ch.Model
		hold := false
		for _, choice := range ch.Choices {
			if choice.Delta.Content != nil {
				content.WriteString(*choice.Delta.Content)
			}
			for _, d := range choice.Delta.ToolCalls {
				tc := calls[d.Index]
				if tc == nil {
					tc = &toolCall{Type: "function"}
					calls[d.Index] = tc
				}
				if d.ID != "" {
					tc.ID = d.ID
				}
				tc.Function.Name += d.Function.Name
				tc.Function.Arguments += d.Function.Arguments
				hold = true
			}
			if choice.FinishReason != nil {
				hold = true
			}
		}
		if hold {
			held = append(held, []byte(data))
			continue
		}
		c.sse.event([]byte(data))
	}
	for i := 0; i < len(calls); i++ {
		if tc := calls[i]; tc != nil && tc.Function.Name == ToolName {
			turn.call = tc
			break
		}
	}
	if turn.call == nil {
		for _, h := range held {
			c.sse.event(h)
		}
		c.sse.done()
		return nil, true
	}
	if content.Len() > 0 {
		turn.content = replay.Marshal(content.String())
	}
	return turn, false
}

// sseWriter writes a server-sent event stream to the client.
type sseWriter struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sseWriter {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sseWriter{w: w, f: f}
}

func (s *sseWriter) event(data []byte) {
	s.w.Write([]byte("data: "))
	s.w.Write(data)
	s.w.Write([]byte("\n\n"))
	if s.f != nil {
		s.f.Flush()
	}
}

func (s *sseWriter) done() { s.event([]byte("[DONE]")) }
