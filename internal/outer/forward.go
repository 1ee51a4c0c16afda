package outer

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Forwarding: an upstream server asks the gateway for input while it serves
// a call a run made (elicitation/create, sampling/createMessage,
// roots/list), and the gateway passes the request on to the client of
// that run, through the run's channel, and the answer back. The methods
// here are that passing on; package upstream decides which run's channel a
// request belongs to, and the serving layer puts the channel where it
// looks (upstream.WithForwarder).
//
// A client asked directly gets the request itself. On the 2026-07-28
// protocol a server cannot send its client a request in the middle of a
// call, and a forwarded request must be answered while the upstream's call
// is still open: the serving layer can hold the run and answer the call
// with the question in an input-required result, the client's retry
// bringing the answer (SetMidCall); without that, ErrMidCall.

// ErrMidCall is returned when the channel's client speaks the 2026-07-28
// protocol and the serving layer cannot hold the run while it answers.
var ErrMidCall = errors.New("the run's MCP client speaks the 2026-07-28 protocol, in which a server cannot send it a request in the middle of a call")

// MidCall asks a 2026-07-28 client req (an *mcp.ElicitParams,
// *mcp.CreateMessageParams or *mcp.ListRootsParams) in the middle of a
// call, and returns its answer.
type MidCall func(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error)

// SetMidCall says how to ask a 2026-07-28 client an upstream's request in
// the middle of its call (see MidCall); the serving layer sets it when it
// can hold the run until the client calls again with the answer.
func (c *Channel) SetMidCall(f MidCall) {
	c.mu.Lock()
	c.mid = f
	c.mu.Unlock()
}

func (c *Channel) midCall() MidCall {
	if c == nil || !c.mrtr {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mid
}

// NotDeclaredError is returned for a request the channel's client did not
// declare the capability for.
type NotDeclaredError struct{ Capability string }

func (e *NotDeclaredError) Error() string {
	return fmt.Sprintf("the run's MCP client did not declare the %s capability", e.Capability)
}

// ServerIDKey is the _meta key that names, in a forwarded request, the
// upstream server that asked.
const ServerIDKey = "codemode/serverId"

// clientCaps is what the channel's client declared, if it can be asked
// directly.
func (c *Channel) clientCaps() *mcp.ClientCapabilities {
	if c == nil {
		return nil
	}
	if c.mrtr {
		if c.midCall() == nil {
			return nil
		}
		return c.caps
	}
	if c.session == nil {
		return nil
	}
	if p := c.session.InitializeParams(); p != nil {
		return p.Capabilities
	}
	return nil
}

// ClientCapabilities is what the channel's client can be asked on an
// upstream's behalf: its elicitation, sampling and roots capabilities, as
// it declared them (nothing for a client that cannot be asked directly).
func (c *Channel) ClientCapabilities() *mcp.ClientCapabilities {
	out := &mcp.ClientCapabilities{}
	if c != nil && c.ask != nil {
		out.Elicitation = &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}}
	}
	caps := c.clientCaps()
	if caps == nil {
		return out
	}
	out.Elicitation, out.Sampling, out.RootsV2 = caps.Elicitation, caps.Sampling, caps.RootsV2
	if out.RootsV2 == nil && caps.Roots.ListChanged {
		out.RootsV2 = &mcp.RootCapabilities{ListChanged: true}
	}
	return out
}

// Peer identifies the channel's client: the channels of the calls of one
// MCP session share it.
func (c *Channel) Peer() any {
	if c != nil && c.session != nil {
		return c.session
	}
	return c
}

func (c *Channel) askable() error {
	if c != nil && c.mrtr {
		if c.midCall() == nil {
			return ErrMidCall
		}
		return nil
	}
	if c == nil || c.session == nil && c.ask == nil {
		return errors.New("the run has no MCP client to ask")
	}
	return nil
}

func withServer(m mcp.Meta, serverID string) mcp.Meta {
	out := mcp.Meta{}
	for k, v := range m {
		out[k] = v
	}
	out[ServerIDKey] = serverID
	return out
}

// ForwardElicit asks the client p on behalf of upstream serverID, whose id
// starts the message.
func (c *Channel) ForwardElicit(ctx context.Context, serverID string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if err := c.askable(); err != nil {
		return nil, err
	}
	q := *p
	q.Message = "[" + serverID + "] " + p.Message
	q.Meta = withServer(p.Meta, serverID)
	if c.ask != nil {
		return c.ask(ctx, &q)
	}
	caps := c.clientCaps()
	switch {
	case caps == nil || caps.Elicitation == nil:
		return nil, &NotDeclaredError{"elicitation"}
	case q.Mode == "url" && caps.Elicitation.URL == nil:
		return nil, &NotDeclaredError{"elicitation (url mode)"}
	case q.Mode != "url" && caps.Elicitation.Form == nil && caps.Elicitation.URL != nil:
		return nil, &NotDeclaredError{"elicitation (form mode)"}
	}
	if mid := c.midCall(); mid != nil {
		res, err := mid(ctx, &q)
		if err != nil {
			return nil, err
		}
		r, ok := res.(*mcp.ElicitResult)
		if !ok {
			return nil, fmt.Errorf("the client answered elicitation/create with %T", res)
		}
		return r, nil
	}
	return c.session.Elicit(ctx, &q)
}

// ForwardSampling asks the client for a sampling/createMessage on behalf of
// upstream serverID (named in the request's _meta).
func (c *Channel) ForwardSampling(ctx context.Context, serverID string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if err := c.askable(); err != nil {
		return nil, err
	}
	caps := c.clientCaps()
	if caps == nil || caps.Sampling == nil {
		return nil, &NotDeclaredError{"sampling"}
	}
	q := *p
	q.Meta = withServer(p.Meta, serverID)
	if mid := c.midCall(); mid != nil {
		res, err := mid(ctx, &q)
		if err != nil {
			return nil, err
		}
		switch r := res.(type) {
		case *mcp.CreateMessageResult:
			return r, nil
		case *mcp.CreateMessageWithToolsResult:
			// The SDK decodes every sampling answer so.
			if len(r.Content) != 1 {
				return nil, fmt.Errorf("the client answered sampling/createMessage with %d content blocks, not one", len(r.Content))
			}
			return &mcp.CreateMessageResult{Meta: r.Meta, Content: r.Content[0], Model: r.Model, Role: r.Role, StopReason: r.StopReason}, nil
		}
		return nil, fmt.Errorf("the client answered sampling/createMessage with %T", res)
	}
	return c.session.CreateMessage(ctx, &q)
}

// ForwardRoots asks the client for its roots on behalf of upstream
// serverID (named in the request's _meta).
func (c *Channel) ForwardRoots(ctx context.Context, serverID string) (*mcp.ListRootsResult, error) {
	if err := c.askable(); err != nil {
		return nil, err
	}
	caps := c.clientCaps()
	if caps == nil || caps.RootsV2 == nil && !caps.Roots.ListChanged {
		// The SDK keeps a declared roots capability in RootsV2; an older
		// client's {} declaration arrives there too.
		return nil, &NotDeclaredError{"roots"}
	}
	q := &mcp.ListRootsParams{Meta: mcp.Meta{ServerIDKey: serverID}}
	if mid := c.midCall(); mid != nil {
		res, err := mid(ctx, q)
		if err != nil {
			return nil, err
		}
		r, ok := res.(*mcp.ListRootsResult)
		if !ok {
			return nil, fmt.Errorf("the client answered roots/list with %T", res)
		}
		return r, nil
	}
	return c.session.ListRoots(ctx, q)
}
