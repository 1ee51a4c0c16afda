package upstream

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream's own progress. A call whose context carries a ProgressFunc
// (WithProgress) is sent with a progress token of the Manager's own; the
// upstream's notifications/progress for that token reach the function,
// their message redacted, until the call returns. Tokens are unique per
// Manager, so notifications of concurrent calls on one session never mix.

// ProgressFunc receives an upstream's notifications/progress for one call:
// progress out of total (0: unknown) and the message, redacted.
type ProgressFunc func(progress, total float64, message string)

type progressKey struct{}

// WithProgress returns ctx whose tool calls report the upstream's progress
// to f.
func WithProgress(ctx context.Context, f ProgressFunc) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, progressKey{}, f)
}

func progressFrom(ctx context.Context) ProgressFunc {
	f, _ := ctx.Value(progressKey{}).(ProgressFunc)
	return f
}

// progressTokens routes an upstream's progress notifications to the calls
// that asked for them.
type progressTokens struct {
	next  atomic.Uint64
	mu    sync.Mutex
	funcs map[string]ProgressFunc
}

// watch registers f under a fresh token, which stop unregisters.
func (p *progressTokens) watch(f ProgressFunc) (token string, stop func()) {
	token = "codemode-" + strconv.FormatUint(p.next.Add(1), 10)
	p.mu.Lock()
	if p.funcs == nil {
		p.funcs = map[string]ProgressFunc{}
	}
	p.funcs[token] = f
	p.mu.Unlock()
	return token, func() {
		p.mu.Lock()
		delete(p.funcs, token)
		p.mu.Unlock()
	}
}

// notified hands a notification to the call it belongs to, if it is still
// in flight. A token that is not a string is none of ours.
func (m *Manager) progressNotified(r *mcp.ProgressNotificationClientRequest) {
	if r == nil || r.Params == nil {
		return
	}
	token, ok := r.Params.ProgressToken.(string)
	if !ok {
		return
	}
	m.progress.mu.Lock()
	f := m.progress.funcs[token]
	m.progress.mu.Unlock()
	if f != nil {
		f(r.Params.Progress, r.Params.Total, m.redact.String(r.Params.Message))
	}
}

// withProgressToken sets a progress token on params when ctx asks for the
// upstream's progress; stop ends the routing once the call is over.
func (m *Manager) withProgressToken(ctx context.Context, params *mcp.CallToolParams) (stop func()) {
	f := progressFrom(ctx)
	if f == nil {
		return func() {}
	}
	token, stop := m.progress.watch(f)
	params.SetProgressToken(token)
	return stop
}
