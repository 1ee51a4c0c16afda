// Package outer is the channel from inside one run back to the MCP client
// whose tools/call started it (the run's "outer" client): what the gateway
// may ask that client while a script runs, and how.
//
// Start with [New], which the serving layer calls for every tools/call, and
// [From], which code deep inside a run (package run) uses to find the
// channel of the call it serves; [With] puts a channel in a context. A run
// without one (codemode run, replay) has no client to ask.
//
// There are two ways to ask a client, and a [Channel] hides which one a call
// uses:
//
//   - A client on a protocol before 2026-07-28 is sent a request of its own
//     (elicitation/create), if it declared the capability, and the answer
//     comes back while the tools/call is still open: [Channel.Elicit] blocks
//     until then.
//   - A client on the 2026-07-28 protocol is asked with an input-required
//     result (SEP-2322, multi round-trip requests): the tools/call is
//     answered with the questions at once, and the client calls again with
//     the answers. [Channel.Elicit] then returns [ErrInputRequired] the
//     first time; the run saves what it needs to go on with
//     [Channel.SetState] (sealed: encrypted and bound to the call's name and
//     arguments), and the serving layer answers with
//     [Channel.InputRequired]. On the retry [Channel.State] returns that
//     state and [Channel.Elicit] answers from the client's inputResponses.
//     Nothing is kept between the two calls but what the client carries, so
//     this works with stateless HTTP.
//
// Elicitation (tool-call approvals) is the first user; the upstreams' own
// requests (elicitation, sampling, roots) passed on to the client are the
// second (forward.go). An upstream's request must be answered while its
// call is open, so for a 2026-07-28 client the serving layer holds the run
// and puts the request in the call's input-required result
// ([Channel.SetMidCall]): that exchange keeps the run in the process. Progress notifications, which need no answer and are
// rate-limited, go through package progress.
package outer

import (
	"context"
	"errors"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ProtocolInputRequired is the first protocol version in which a server asks
// a client for input through input-required results rather than requests
// of its own.
const ProtocolInputRequired = "2026-07-28"

// ErrInputRequired is returned by [Channel.Elicit] when the question goes
// back to the client in an input-required result: the run must stop, save
// its state (SetState) and let the client call again with the answer.
var ErrInputRequired = errors.New("outer: the client answers with its next call (input required)")

// ErrCannotAsk is returned by [Channel.Elicit] when the client declared no
// way to be asked.
var ErrCannotAsk = errors.New("outer: the client declared no elicitation capability")

// Channel is the way back to one tools/call's client. It is safe for
// concurrent use.
type Channel struct {
	session  *mcp.ServerSession
	protocol string
	elicit   bool // the client declared elicitation
	// ask replaces session.Elicit (NewFunc).
	ask func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)

	// Input-required (2026-07-28) calls only.
	mrtr      bool
	responses mcp.InputResponseMap
	state     []byte // opened from the request's requestState
	stateErr  error
	seal      func([]byte) (string, error)

	// caps is what a 2026-07-28 client declared on this request.
	caps *mcp.ClientCapabilities

	mu       sync.Mutex
	requests mcp.InputRequestMap
	out      []byte  // SetState's state, sealed when the result is built
	mid      MidCall // see SetMidCall
}

// Options configure New.
type Options struct {
	// Sealer protects the state carried by input-required results. Without
	// one, a client on the 2026-07-28 protocol cannot be asked anything.
	Sealer *Sealer
}

// New returns the channel of a tools/call request.
func New(req *mcp.CallToolRequest, opts *Options) *Channel {
	c := &Channel{session: req.Session, protocol: req.ProtocolVersion()}
	if c.protocol == "" && req.Session != nil {
		if p := req.Session.InitializeParams(); p != nil {
			c.protocol = p.ProtocolVersion
		}
	}
	if caps := req.ClientCapabilities(); caps != nil && caps.Elicitation != nil {
		c.elicit = caps.Elicitation.URL == nil || caps.Elicitation.Form != nil // form elicitation, or the pre-mode declaration {}
	}
	c.mrtr = c.protocol >= ProtocolInputRequired
	if !c.mrtr {
		return c
	}
	c.caps = req.ClientCapabilities()
	var sealer *Sealer
	if opts != nil {
		sealer = opts.Sealer
	}
	if sealer == nil {
		c.elicit = false
		return c
	}
	var args []byte
	name := ""
	if req.Params != nil {
		args, name = req.Params.Arguments, req.Params.Name
		c.responses = req.Params.InputResponses
		if st := req.Params.RequestState; st != "" {
			c.state, c.stateErr = sealer.Open(st, name, args)
		}
	}
	c.seal = func(b []byte) (string, error) { return sealer.Seal(b, name, args) }
	return c
}

// NewFunc returns a channel whose questions elicit answers: a client that
// is asked directly, as one on a protocol before 2026-07-28 is. For hosts
// that ask their user themselves, and for tests.
func NewFunc(elicit func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)) *Channel {
	return &Channel{elicit: elicit != nil, ask: elicit}
}

type ctxKey struct{}

// With returns ctx carrying c.
func With(ctx context.Context, c *Channel) context.Context {
	return context.WithValue(ctx, ctxKey{}, c)
}

// From returns the channel ctx carries, or nil.
func From(ctx context.Context) *Channel {
	c, _ := ctx.Value(ctxKey{}).(*Channel)
	return c
}

// Protocol is the protocol version the client speaks on this call.
func (c *Channel) Protocol() string { return c.protocol }

// InputRequiredMode reports whether questions go back in input-required
// results (the 2026-07-28 protocol) rather than requests of the server's.
func (c *Channel) InputRequiredMode() bool { return c.mrtr }

// CanElicit reports whether the client can be asked with elicitation (a
// request, or an input-required result).
func (c *Channel) CanElicit() bool { return c != nil && c.elicit }

// Elicit asks the client p. key names the question across the calls of an
// input-required exchange: the same question must have the same key on the
// retry, which is how its answer is found. A client on an older protocol is
// asked at once, and Elicit waits for the answer; a client on the
// 2026-07-28 protocol is answered from its inputResponses if they hold key,
// and otherwise the question is queued for the input-required result and
// Elicit returns ErrInputRequired.
func (c *Channel) Elicit(ctx context.Context, key string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if !c.CanElicit() {
		return nil, ErrCannotAsk
	}
	if !c.mrtr {
		if c.ask != nil {
			return c.ask(ctx, p)
		}
		return c.session.Elicit(ctx, p)
	}
	if r, ok := c.responses[key].(*mcp.ElicitResult); ok {
		return r, nil
	}
	c.mu.Lock()
	if c.requests == nil {
		c.requests = mcp.InputRequestMap{}
	}
	c.requests[key] = p
	c.mu.Unlock()
	return nil, ErrInputRequired
}

// State returns the state a previous call of this exchange saved with
// SetState, or nil if there is none. An error means the client sent a
// requestState this gateway cannot use (altered, made for another call, or
// sealed by another gateway process).
func (c *Channel) State() ([]byte, error) {
	if c == nil {
		return nil, nil
	}
	return c.state, c.stateErr
}

// SetState saves what the run needs to go on when the client calls again
// with the answers. Only the last state saved is sent.
func (c *Channel) SetState(b []byte) {
	c.mu.Lock()
	c.out = b
	c.mu.Unlock()
}

// Seal seals b as SetState's state is sealed: encrypted, and bound to the
// call's name and arguments. Only a channel of a 2026-07-28 call with a
// Sealer can.
func (c *Channel) Seal(b []byte) (string, error) {
	if c == nil || c.seal == nil {
		return "", errors.New("outer: this call's state cannot be sealed")
	}
	return c.seal(b)
}

// InputRequired returns the input-required result to answer the call with,
// if a question was queued: the questions and the sealed state. It returns
// an error result instead when the state cannot be sealed.
func (c *Channel) InputRequired() (*mcp.CallToolResult, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.requests) == 0 {
		return nil, false
	}
	res := &mcp.CallToolResult{InputRequests: c.requests}
	if c.out != nil {
		st, err := c.seal(c.out)
		if err != nil {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "codemode could not save the run's state for the input-required round trip: " + err.Error()}}}, true
		}
		res.RequestState = st
	}
	return res, true
}
