package serve

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/outer"
	"github.com/codemode-mcp/codemode/internal/store"
)

// Held runs: an upstream's request (elicitation, sampling, roots) for a
// client on the 2026-07-28 protocol. Such a client cannot be sent a request
// in the middle of its call, and the upstream's call waits for the answer:
// so the run goes on in the background, held, and the call is answered at
// once with the question in an input-required result whose requestState
// names the held run (sealed, bound to the call's name and arguments). The
// client's retry brings the answer, which goes to the upstream, and waits
// for the run's end or its next question. The go-sdk client does this
// round trip by itself.
//
// A held run lives in this gateway process only: a retry that reaches
// another replica, or comes after the gateway restarted, is answered with
// an error that says to call again without the state. A run whose client
// never calls again ends at its deadline (timeoutMs, which runs while the
// question waits) and is forgotten heldKeep later. A client that declared
// the tasks extension is not held (its long calls become tasks, which
// would take the question for their result): its upstreams' requests are
// refused, saying why (outer.ErrMidCall).

// heldPrefix starts the requestState of a held run's question.
const heldPrefix = "codemode-held:"

// heldKeep is how long a held run that ended is kept for its client's
// retry.
const heldKeep = time.Minute

// held is a run held while its client answers an upstream's question.
type held struct {
	client string // clientOf: only the same client may resume it
	cancel context.CancelFunc
	asks   chan *heldAsk
	done   chan struct{} // closed once res and err are set
	res    *mcp.CallToolResult
	err    error

	mu      sync.Mutex
	id      string   // "" until the first question
	n       int      // questions asked so far
	pending *heldAsk // the question the client's next call answers
	key     string   // pending's key in inputRequests
	busy    bool     // a call of the client is waiting on the run
}

// heldAsk is one upstream request put to the client.
type heldAsk struct {
	req    mcp.InputRequest
	answer chan mcp.InputResponse
}

// ask is the channel's outer.MidCall: it hands the question to the call
// waiting on the run (the current one, or the client's next) and waits for
// the answer.
func (h *held) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	a := &heldAsk{req: req, answer: make(chan mcp.InputResponse, 1)}
	select {
	case h.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-a.answer:
		return r, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("the client did not answer before the run ended: %w", ctx.Err())
	}
}

// canHold reports whether a call's run may be held (see above).
func (s *Server) canHold(req *mcp.CallToolRequest, ch *outer.Channel) bool {
	if !ch.InputRequiredMode() || s.sealer == nil {
		return false
	}
	if caps := req.ClientCapabilities(); caps != nil {
		if _, declared := caps.Extensions[tasksExtension]; declared {
			return false
		}
	}
	return true
}

// hold runs exec in the background, its run able to ask the client
// through ch, and answers the call with its result or its first question.
func (s *Server) hold(ctx context.Context, req *mcp.CallToolRequest, ch *outer.Channel, exec func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	// The run outlives the request: it keeps the request's values (who
	// asked, the session) without its end, and ends with the gateway's
	// runs.
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(s.runs, cancel)
	h := &held{client: s.clientOf(req.Extra), cancel: cancel, asks: make(chan *heldAsk), done: make(chan struct{}), busy: true}
	ch.SetMidCall(h.ask)
	s.inflight.Add(1)
	go func() {
		defer s.inflight.Done()
		defer stop()
		defer cancel()
		h.res, h.err = exec(runCtx)
		close(h.done)
		h.mu.Lock()
		id := h.id
		h.mu.Unlock()
		if id != "" {
			time.AfterFunc(heldKeep, func() { s.held.Delete(id) })
		}
	}()
	return s.await(ctx, h, ch)
}

// await waits, for a call of the client, for the held run's end or its
// next question.
func (s *Server) await(ctx context.Context, h *held, ch *outer.Channel) (*mcp.CallToolResult, error) {
	defer func() {
		h.mu.Lock()
		h.busy = false
		h.mu.Unlock()
	}()
	select {
	case <-h.done:
		return h.res, h.err
	case a := <-h.asks:
		h.mu.Lock()
		if h.id == "" {
			h.id = store.NewID()
			s.held.Store(h.id, h)
		}
		h.n++
		h.pending, h.key = a, fmt.Sprintf("upstream-%d", h.n)
		id, key := h.id, h.key
		h.mu.Unlock()
		st, err := ch.Seal([]byte(heldPrefix + id))
		if err != nil {
			h.cancel()
			return errorResult("codemode could not save the run's state for the input-required round trip: " + err.Error()), nil
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{key: a.req}, RequestState: st}, nil
	case <-ctx.Done():
		// The client gave up on the call, or the gateway's grace period
		// ended: the run ends, and says so (CANCELLED).
		h.cancel()
		<-h.done
		return h.res, h.err
	}
}

// resumeHeld answers a call whose requestState names a held run: the
// answer goes to the run, and the call waits for its end or its next
// question. ok is false for any other call.
func (s *Server) resumeHeld(ctx context.Context, req *mcp.CallToolRequest, ch *outer.Channel) (res *mcp.CallToolResult, err error, ok bool) {
	st, stErr := ch.State()
	if stErr != nil || !bytes.HasPrefix(st, []byte(heldPrefix)) {
		return nil, nil, false
	}
	const again = "; call the tool again without requestState and inputResponses: the script starts over"
	v, found := s.held.Load(string(st[len(heldPrefix):]))
	if !found {
		return errorResult("the run that asked this question is no longer held by this gateway process (it ended more than " +
			heldKeep.String() + " ago, the gateway restarted, or the call reached another replica)" + again), nil, true
	}
	h := v.(*held)
	if h.client != s.clientOf(req.Extra) {
		return errorResult("this requestState belongs to another client's run" + again), nil, true
	}
	h.mu.Lock()
	if h.busy {
		h.mu.Unlock()
		return errorResult("another call is already waiting on this run: answer its question there"), nil, true
	}
	a, key := h.pending, h.key
	var answer mcp.InputResponse
	if a != nil {
		if answer, found = req.Params.InputResponses[key]; !found {
			h.mu.Unlock()
			return errorResult(fmt.Sprintf("the call does not answer the question %q in its inputResponses", key)), nil, true
		}
	}
	h.pending, h.busy = nil, true
	h.mu.Unlock()
	if a != nil {
		a.answer <- answer
	}
	res, err = s.await(ctx, h, ch)
	return res, err, true
}
