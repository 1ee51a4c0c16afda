package upstream

import (
	"context"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The multi-round-trip loop (2026-07-28, SEP-2322) of calls to an upstream.
// A 2026-07-28 server asks its client for input in the call's own result
// (input required); the client answers each request and sends the call
// again with the answers. The SDK's own loop answers roots/list from the
// client's static list, never through a receiving middleware, so it is off
// (ClientOptions.MultiRoundTrip) and this one answers every request as an
// upstream's request of its own is answered (forward.go): passed on to the
// client of the run that made the call.

// maxInputRounds bounds the rounds of one call, and maxShedRounds the
// rounds answered with no request at all (a server shedding load), as the
// SDK's loop does.
const (
	maxInputRounds = 10
	maxShedRounds  = 3
)

// inputRounds is the sending middleware of the loop.
func (c *serverConn) inputRounds(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" && method != "prompts/get" && method != "resources/read" {
			return next(ctx, method, req)
		}
		shed := 0
		for round := 1; ; round++ {
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			var asks mcp.InputRequestMap
			var state string
			switch r := res.(type) {
			case *mcp.CallToolResult:
				asks, state = r.InputRequests, r.RequestState
			case *mcp.GetPromptResult:
				asks, state = r.InputRequests, r.RequestState
			case *mcp.ReadResourceResult:
				asks, state = r.InputRequests, r.RequestState
			}
			if asks == nil {
				return res, nil
			}
			if len(asks) == 0 {
				if shed++; shed >= maxShedRounds {
					return nil, fmt.Errorf("%q is busy: it answered %d times without a result", c.cfg.ID, shed)
				}
			}
			if round >= maxInputRounds {
				return nil, fmt.Errorf("%q asked for input %d times in one call; codemode gives up", c.cfg.ID, round)
			}
			cs, ok := req.GetSession().(*mcp.ClientSession)
			if !ok {
				return res, nil
			}
			answers, err := c.answerRound(ctx, cs, asks)
			if err != nil {
				return nil, err
			}
			if req, err = retryRequest(cs, req, answers, state); err != nil {
				return nil, err
			}
		}
	}
}

// answerRound answers one round's requests, at once.
func (c *serverConn) answerRound(ctx context.Context, cs *mcp.ClientSession, asks mcp.InputRequestMap) (mcp.InputResponseMap, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	var first error
	out := make(mcp.InputResponseMap, len(asks))
	var wg sync.WaitGroup
	for key, ask := range asks {
		wg.Go(func() {
			r, err := c.answerOne(ctx, cs, ask)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if first == nil {
					first = err
					cancel()
				}
				return
			}
			out[key] = r
		})
	}
	wg.Wait()
	return out, first
}

// answerOne answers one request of an input-required result.
func (c *serverConn) answerOne(ctx context.Context, cs *mcp.ClientSession, ask mcp.InputRequest) (mcp.InputResponse, error) {
	switch p := ask.(type) {
	case *mcp.ElicitParams:
		return c.handleElicit(ctx, &mcp.ElicitRequest{Session: cs, Params: p})
	case *mcp.CreateMessageParams:
		return c.sampleRound(ctx, cs, p)
	case *mcp.CreateMessageWithToolsParams:
		// Passed on without its tools, as the SDK's basic handler is.
		msgs := make([]*mcp.SamplingMessage, 0, len(p.Messages))
		for _, m := range p.Messages {
			if len(m.Content) > 1 {
				return nil, c.refusal("sampling/createMessage", fmt.Sprintf("a message has %d content blocks; codemode passes on one", len(m.Content)))
			}
			sm := &mcp.SamplingMessage{Role: m.Role}
			if len(m.Content) == 1 {
				sm.Content = m.Content[0]
			}
			msgs = append(msgs, sm)
		}
		return c.sampleRound(ctx, cs, &mcp.CreateMessageParams{Meta: p.Meta, IncludeContext: p.IncludeContext, MaxTokens: p.MaxTokens,
			Messages: msgs, Metadata: p.Metadata, ModelPreferences: p.ModelPreferences, StopSequences: p.StopSequences,
			SystemPrompt: p.SystemPrompt, Temperature: p.Temperature})
	case *mcp.ListRootsParams:
		var meta mcp.Meta
		if p != nil {
			meta = p.Meta
		}
		f, err := c.forwarderFor(ctx, "roots/list", meta)
		if err != nil {
			return nil, err
		}
		res, err := f.ForwardRoots(ctx, c.cfg.ID)
		if err != nil {
			return nil, c.forwardErr("roots/list", err)
		}
		return res, nil
	}
	return nil, fmt.Errorf("%q asked for input of a kind codemode does not know (%T)", c.cfg.ID, ask)
}

// sampleRound answers a sampling request in the form the SDK's own loop
// answers it (content as a list).
func (c *serverConn) sampleRound(ctx context.Context, cs *mcp.ClientSession, p *mcp.CreateMessageParams) (mcp.InputResponse, error) {
	r, err := c.handleSampling(ctx, &mcp.CreateMessageRequest{Session: cs, Params: p})
	if err != nil {
		return nil, err
	}
	return &mcp.CreateMessageWithToolsResult{Meta: r.Meta, Content: []mcp.Content{r.Content}, Model: r.Model, Role: r.Role, StopReason: r.StopReason}, nil
}

// retryRequest is req again with the answers and the state to echo; the
// caller's params are copied, never changed.
func retryRequest(cs *mcp.ClientSession, req mcp.Request, answers mcp.InputResponseMap, state string) (mcp.Request, error) {
	switch p := req.GetParams().(type) {
	case *mcp.CallToolParams:
		cp := *p
		cp.InputResponses, cp.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.CallToolParams]{Session: cs, Params: &cp}, nil
	case *mcp.GetPromptParams:
		cp := *p
		cp.InputResponses, cp.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.GetPromptParams]{Session: cs, Params: &cp}, nil
	case *mcp.ReadResourceParams:
		cp := *p
		cp.InputResponses, cp.RequestState = answers, state
		return &mcp.ClientRequest[*mcp.ReadResourceParams]{Session: cs, Params: &cp}, nil
	}
	return nil, fmt.Errorf("codemode cannot send %T again with answers", req.GetParams())
}
