// Package progress turns what happens inside one run into MCP progress
// notifications for the client whose tools/call started it: each inner tool
// call's start and end, the upstreams' own progress during those calls, and
// the script's console lines as they are written.
//
// Start with [New], which the serving layer calls for a tools/call that
// carries a progressToken in its _meta, and [With]/[From], which carry the
// [Reporter] to the run. A call without a token gets no Reporter, and every
// method of a nil *Reporter does nothing: nothing is sent.
//
// # What the numbers mean
//
// MCP requires the progress value to grow with every notification, and the
// total of a script's work is unknown, so no total is sent and the value
// counts steps:
//
//   - an inner call's start is one step ("<server>/<tool> started");
//   - its second step is shared by the upstream's own notifications, which
//     move the value by their share of it (progress/total, or half of what
//     is left when the upstream sends no total; at most 0.99 of the step),
//     with the message "<server>: <upstream's message>", and by the call's
//     end, which takes whatever is left ("<server>/<tool> done" or
//     "failed");
//   - a console line is one step ("console.<level>: <text>").
//
// Notifications are rate-limited ([Options.Rate], [Options.Burst]: by
// default a burst of 50, then 20 a second): those over the limit are not
// sent, and the next one sent says how many were skipped. They are sent by a
// goroutine of their own, so a slow client never holds up the script; when
// its queue is full, the notification is skipped too. [Reporter.Close]
// sends what is queued and stops, before the call's result goes out.
package progress

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/codemode-mcp/codemode/internal/redact"
)

// Options configure a Reporter. The zero value is usable.
type Options struct {
	// Rate is how many notifications a second may be sent after the
	// burst. Default 20.
	Rate float64
	// Burst is how many may be sent at once. Default 50.
	Burst int
	// Queue is how many notifications may wait for the client. Default 256.
	Queue int
	// MaxMessageBytes bounds a notification's message (clipped by Redact).
	// Default 1000.
	MaxMessageBytes int
	// Redact removes secrets from messages before they are clipped; nil
	// only clips.
	Redact *redact.Redactor
	// Now is the rate limiter's clock. Default time.Now.
	Now func() time.Time
}

// Sender sends one notification to the client, e.g. a ServerSession's
// NotifyProgress with the request's context.
type Sender func(*mcp.ProgressNotificationParams) error

// Reporter sends the progress notifications of one tools/call. It is safe
// for concurrent use; a nil *Reporter does nothing.
type Reporter struct {
	token any
	send  Sender
	opts  Options
	lim   *rate.Limiter

	mu      sync.Mutex
	value   float64 // the last value computed (sent or skipped)
	skipped int     // notifications not sent since the last one sent
	sent    int     // notifications queued to be sent
	closed  bool
	queue   chan *mcp.ProgressNotificationParams
	done    chan struct{}
}

// New returns a Reporter that sends notifications with token through send.
func New(token any, send Sender, opts *Options) *Reporter {
	r := &Reporter{token: token, send: send}
	if opts != nil {
		r.opts = *opts
	}
	if r.opts.Rate <= 0 {
		r.opts.Rate = 20
	}
	if r.opts.Burst <= 0 {
		r.opts.Burst = 50
	}
	if r.opts.Queue <= 0 {
		r.opts.Queue = 256
	}
	if r.opts.MaxMessageBytes <= 0 {
		r.opts.MaxMessageBytes = 1000
	}
	if r.opts.Now == nil {
		r.opts.Now = time.Now
	}
	r.lim = rate.NewLimiter(rate.Limit(r.opts.Rate), r.opts.Burst)
	r.queue = make(chan *mcp.ProgressNotificationParams, r.opts.Queue)
	r.done = make(chan struct{})
	go r.loop()
	return r
}

func (r *Reporter) loop() {
	defer close(r.done)
	for p := range r.queue {
		// A client that went away fails every send; the run goes on.
		_ = r.send(p)
	}
}

// Close sends what is queued and stops the Reporter; later events are
// dropped. It returns once the queue is empty.
func (r *Reporter) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	close(r.queue)
	r.mu.Unlock()
	<-r.done
}

// Sent is how many notifications were sent (or queued to be).
func (r *Reporter) Sent() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent
}

// step advances the value by delta (> 0) and sends msg, unless the rate
// limit or a full queue skips it.
func (r *Reporter) step(delta float64, msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.value += delta
	if !r.lim.AllowN(r.opts.Now(), 1) {
		r.skipped++
		return
	}
	if r.skipped > 0 {
		msg = fmt.Sprintf("%s (%d earlier notification(s) skipped: rate limit)", msg, r.skipped)
	}
	p := &mcp.ProgressNotificationParams{ProgressToken: r.token, Progress: r.value,
		Message: r.opts.Redact.Clip(msg, r.opts.MaxMessageBytes)}
	select {
	case r.queue <- p:
		r.skipped = 0
		r.sent++
	default:
		r.skipped++
	}
}

// Call is one inner tool call's share of the progress: see the package
// doc. Its methods may be called from any goroutine; a nil *Call does
// nothing.
type Call struct {
	r            *Reporter
	server, tool string

	mu    sync.Mutex
	frac  float64 // how much of the second step the upstream has used
	ended bool
}

// maxUpstreamShare is how much of a call's second step its upstream's own
// notifications may use: the end always moves the value.
const maxUpstreamShare = 0.99

// CallStarted reports the start of a call of tool on server and returns
// the call, whose Upstream and End report the rest.
func (r *Reporter) CallStarted(server, tool string) *Call {
	if r == nil {
		return nil
	}
	r.step(1, server+"/"+tool+" started")
	return &Call{r: r, server: server, tool: tool}
}

// Upstream reports the upstream's own notifications/progress during the
// call: progress out of total (total 0: unknown), and its message.
func (c *Call) Upstream(progress, total float64, message string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	var f float64
	switch {
	case total > 0:
		f = min(max(progress/total, 0), 1) * maxUpstreamShare
	default:
		f = c.frac + (maxUpstreamShare-c.frac)/2
	}
	delta := f - c.frac
	if c.ended || delta <= 0 {
		// A value that does not grow would break the outer sequence;
		// an upstream must not send one anyway.
		c.mu.Unlock()
		return
	}
	c.frac = f
	c.mu.Unlock()
	msg := c.server + ":"
	if message != "" {
		msg += " " + message
	}
	if total > 0 {
		msg += fmt.Sprintf(" (%g/%g)", progress, total)
	} else {
		msg += fmt.Sprintf(" (%g)", progress)
	}
	c.r.step(delta, msg)
}

// End reports the end of the call: done, or failed.
func (c *Call) End(ok bool) {
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.ended = true
	delta := 1 - c.frac
	c.mu.Unlock()
	word := "done"
	if !ok {
		word = "failed"
	}
	c.r.step(delta, c.server+"/"+c.tool+" "+word)
}

// Log reports one console line of the script, at level ("log", "warn",
// ...).
func (r *Reporter) Log(level, message string) {
	if r == nil {
		return
	}
	r.step(1, "console."+level+": "+message)
}

type ctxKey struct{}

// With returns ctx carrying r.
func With(ctx context.Context, r *Reporter) context.Context {
	if r == nil {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, r)
}

// From returns the Reporter ctx carries, or nil.
func From(ctx context.Context) *Reporter {
	r, _ := ctx.Value(ctxKey{}).(*Reporter)
	return r
}
