package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/redact"
)

// Requests from upstreams. An upstream may ask its client for input while
// it serves a call: elicitation/create, sampling/createMessage,
// roots/list. The gateway is that client; it passes each request on to the
// client of the run whose call caused it (a Forwarder, which a call's
// context carries: WithForwarder) and the answer back.
//
// Which call caused a request:
//
//   - a 2026-07-28 upstream asks in the call's own result (input required);
//     the connection's loop answers it within the call (rounds.go), whose
//     context names the forwarder (an inputRequests of a task, likewise);
//   - a 2025-11-25 task's requests carry the task's id (_meta
//     io.modelcontextprotocol/related-task);
//   - otherwise the request arrives on its own, and is the call's in
//     flight on that server: when all of them belong to one client, it is
//     that client's; when calls of several clients are in flight, the
//     gateway cannot tell whose it is and refuses it, saying so.
//
// A request while no run calls the server (at its start, say) is refused
// with an error that says why.
//
// What the gateway declares: to a 2026-07-28 upstream, each call declares
// the capabilities of its run's client (the protocol has them per
// request); a 2025-11-25 session is shared by every client's runs and
// declares elicitation, sampling and roots at its start, and a request the
// run's client cannot answer is refused with the reason. What an upstream
// sends to a client through a request is redacted as all it sends is: the
// whole request (schemas, prompts, hints, metadata, binary data), not only
// its message.

// Forwarder passes an upstream's requests on to the client of a run. The
// serving layer's is the run's outer.Channel.
type Forwarder interface {
	// ClientCapabilities is what the client can be asked.
	ClientCapabilities() *mcp.ClientCapabilities
	// Peer identifies the client: requests of calls with one Peer may go
	// to any of them.
	Peer() any
	ForwardElicit(ctx context.Context, serverID string, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	ForwardSampling(ctx context.Context, serverID string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	ForwardRoots(ctx context.Context, serverID string) (*mcp.ListRootsResult, error)
}

type forwarderKey struct{}

// WithForwarder returns ctx whose tool calls pass their upstream's
// requests on to f.
func WithForwarder(ctx context.Context, f Forwarder) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, forwarderKey{}, f)
}

func forwarderFrom(ctx context.Context) Forwarder {
	f, _ := ctx.Value(forwarderKey{}).(Forwarder)
	return f
}

// forwarding is a server's calls in flight and their forwarders.
type forwarding struct {
	mu    sync.Mutex
	calls map[*inflightCall]bool
	tasks map[string]Forwarder // 2025-11-25 task id → its call's forwarder
}

type inflightCall struct{ f Forwarder }

// track registers a call in flight (its forwarder may be nil: a run with
// no client) until the returned function is called.
func (c *serverConn) track(ctx context.Context) func() {
	call := &inflightCall{f: forwarderFrom(ctx)}
	fw := &c.fwd
	fw.mu.Lock()
	if fw.calls == nil {
		fw.calls = map[*inflightCall]bool{}
	}
	fw.calls[call] = true
	fw.mu.Unlock()
	return func() {
		fw.mu.Lock()
		delete(fw.calls, call)
		fw.mu.Unlock()
	}
}

// ownTask notes that task id belongs to the call whose context is ctx.
func (c *serverConn) ownTask(ctx context.Context, id string) func() {
	f := forwarderFrom(ctx)
	if f == nil {
		return func() {}
	}
	fw := &c.fwd
	fw.mu.Lock()
	if fw.tasks == nil {
		fw.tasks = map[string]Forwarder{}
	}
	fw.tasks[id] = f
	fw.mu.Unlock()
	return func() {
		fw.mu.Lock()
		delete(fw.tasks, id)
		fw.mu.Unlock()
	}
}

// forwarderFor finds the forwarder of an upstream's request (see above),
// or returns the error to answer it with.
func (c *serverConn) forwarderFor(ctx context.Context, method string, meta mcp.Meta) (Forwarder, error) {
	if f := forwarderFrom(ctx); f != nil {
		return f, nil
	}
	fw := &c.fwd
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if rt, ok := meta["io.modelcontextprotocol/related-task"].(map[string]any); ok {
		if id, _ := rt["taskId"].(string); id != "" {
			if f := fw.tasks[id]; f != nil {
				return f, nil
			}
		}
	}
	peers := map[any]Forwarder{}
	noClient := false
	for call := range fw.calls {
		if call.f == nil {
			noClient = true
			continue
		}
		peers[call.f.Peer()] = call.f
	}
	switch {
	case len(peers) == 0 && !noClient:
		return nil, c.refusal(method, "no run is calling this server now: codemode passes a server's requests only to the client of the run whose call caused them")
	case len(peers) == 0:
		return nil, c.refusal(method, "the run calling this server has no MCP client to ask (it was not started by one)")
	case len(peers) > 1 || noClient:
		return nil, c.refusal(method, fmt.Sprintf("calls of %d runs with different clients are in flight on this server and the request does not say which caused it", len(peers)+btoi(noClient)))
	}
	for _, f := range peers {
		return f, nil
	}
	return nil, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// refusal is the error an upstream's request is answered with.
func (c *serverConn) refusal(method, why string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("codemode (gateway) cannot pass %s from %q on: %s", method, c.cfg.ID, why)}
}

// forwardErr turns a forwarder's failure into the upstream's answer.
func (c *serverConn) forwardErr(method string, err error) error {
	if we, ok := err.(*jsonrpc.Error); ok {
		return we
	}
	return c.refusal(method, err.Error())
}

// clientCapabilities is what the gateway declares to its upstreams at the
// start of a 2025-11-25 session (see above).
func clientCapabilities() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{
		Extensions:  map[string]any{TasksExtension: map[string]any{}},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		Sampling:    &mcp.SamplingCapabilities{},
		RootsV2:     &mcp.RootCapabilities{},
	}
}

// tasksOnly is the capabilities of a call whose run has no client to pass
// requests on to: the tasks extension, encoded once.
var tasksOnly = json.RawMessage(`{"extensions":{"` + TasksExtension + `":{}}}`)

// tasksExtensions is the extensions of every call's capabilities.
var tasksExtensions = map[string]any{TasksExtension: map[string]any{}}

// callCapabilities sets, on a call to a 2026-07-28 upstream, the
// capabilities of the run's client (and the tasks extension).
func callCapabilities(ctx context.Context, p *mcp.CallToolParams) {
	if p.Meta == nil {
		p.Meta = mcp.Meta{}
	}
	f := forwarderFrom(ctx)
	if f == nil {
		p.Meta[mcp.MetaKeyClientCapabilities] = tasksOnly
		return
	}
	caps := map[string]any{"extensions": tasksExtensions}
	if cc := f.ClientCapabilities(); cc != nil {
		if cc.Elicitation != nil {
			caps["elicitation"] = cc.Elicitation
		}
		if cc.Sampling != nil {
			caps["sampling"] = cc.Sampling
		}
		if cc.RootsV2 != nil {
			caps["roots"] = cc.RootsV2
		}
	}
	p.Meta[mcp.MetaKeyClientCapabilities] = caps
}

// handleElicit passes an upstream's elicitation/create on.
func (c *serverConn) handleElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	f, err := c.forwarderFor(ctx, "elicitation/create", req.Params.Meta)
	if err != nil {
		return nil, err
	}
	p := redact.Value(c.m.redact, *req.Params)
	res, err := f.ForwardElicit(ctx, c.cfg.ID, &p)
	if err != nil {
		return nil, c.forwardErr("elicitation/create", err)
	}
	return res, nil
}

// handleSampling passes an upstream's sampling/createMessage on.
func (c *serverConn) handleSampling(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	f, err := c.forwarderFor(ctx, "sampling/createMessage", req.Params.Meta)
	if err != nil {
		return nil, err
	}
	p := redactSampling(c.m.redact, *req.Params)
	res, err := f.ForwardSampling(ctx, c.cfg.ID, &p)
	if err != nil {
		return nil, c.forwardErr("sampling/createMessage", err)
	}
	return res, nil
}

// redactSampling returns p with the server's secrets redacted throughout:
// in its JSON (texts, system prompt, stop sequences, model hints, metadata)
// and in the binary data of its messages, which JSON shows only
// base64-encoded. A sampling request goes to the client's model.
func redactSampling(r *redact.Redactor, p mcp.CreateMessageParams) mcp.CreateMessageParams {
	if r.Empty() {
		return p
	}
	p = redact.Value(r, p)
	msgs := make([]*mcp.SamplingMessage, len(p.Messages))
	for i, m := range p.Messages {
		if m == nil {
			continue
		}
		cp := *m
		switch c := m.Content.(type) {
		case *mcp.ImageContent:
			cc := *c
			cc.Data = r.Bytes(c.Data)
			cp.Content = &cc
		case *mcp.AudioContent:
			cc := *c
			cc.Data = r.Bytes(c.Data)
			cp.Content = &cc
		}
		msgs[i] = &cp
	}
	p.Messages = msgs
	return p
}

// rootsMiddleware passes an upstream's roots/list on (the SDK answers it
// from a static list otherwise).
func (c *serverConn) rootsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "roots/list" {
			return next(ctx, method, req)
		}
		var meta mcp.Meta
		if p, ok := req.GetParams().(*mcp.ListRootsParams); ok && p != nil {
			meta = p.Meta
		}
		f, err := c.forwarderFor(ctx, method, meta)
		if err != nil {
			return nil, err
		}
		res, err := f.ForwardRoots(ctx, c.cfg.ID)
		if err != nil {
			return nil, c.forwardErr(method, err)
		}
		return res, nil
	}
}

// answerInputs answers a 2026-07-28 task's inputRequests through the
// call's forwarder: each is {method, params}; the answers have the same
// keys.
func (c *serverConn) answerInputs(ctx context.Context, requests map[string]json.RawMessage) (map[string]any, error) {
	f := forwarderFrom(ctx)
	if f == nil {
		return nil, fmt.Errorf("the task asks for input and the run that called it has no MCP client to ask")
	}
	out := map[string]any{}
	for key, raw := range requests {
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("input request %q is not a request: %v", key, err)
		}
		r.Params = c.m.redact.JSON(r.Params)
		var res any
		var err error
		switch r.Method {
		case "elicitation/create":
			var p mcp.ElicitParams
			if err = json.Unmarshal(r.Params, &p); err == nil {
				res, err = f.ForwardElicit(ctx, c.cfg.ID, &p)
			}
		case "sampling/createMessage":
			var p mcp.CreateMessageParams
			if err = json.Unmarshal(r.Params, &p); err == nil {
				p = redactSampling(c.m.redact, p)
				res, err = f.ForwardSampling(ctx, c.cfg.ID, &p)
			}
		case "roots/list":
			res, err = f.ForwardRoots(ctx, c.cfg.ID)
		default:
			err = fmt.Errorf("codemode does not know the request %q", r.Method)
		}
		if err != nil {
			return nil, fmt.Errorf("input request %q (%s): %v", key, r.Method, err)
		}
		out[key] = res
	}
	return out, nil
}
