package serve

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What one HTTP client can make the gateway hold is bounded, whatever it
// sends or fails to send. Measured before these bounds, each from one
// client on loopback (no token needed there):
//
//   - 38,771 sessions opened in 20 s and abandoned: 1.75 GB, kept until
//     their idle timeout (5 minutes: 26 GB at that rate);
//   - 300 requests whose 4 MiB bodies were sent but for their last bytes:
//     1.7 GB, kept for ever (no deadline on a body);
//   - 2,000 connections that sent headers and one byte of body: kept for
//     ever; 400 connections sending 1 MB of headers: 784 MB.
//
// So: at most MaxSessions sessions live (a new one closes the one idle the
// longest, whose client gets 404 and starts again, as the protocol says);
// request bodies in flight together hold at most MaxBodyBytesInFlight (a
// request that does not fit is refused with 503 at once) and each must
// arrive within BodyTimeout; headers are at most MaxHeaderBytes; idle
// keep-alive connections close after IdleTimeout; at most MaxConnections
// are open (more wait to be accepted). ConfigureHTTPServer applies the
// server-level ones; Handler the others.

const (
	// DefaultMaxSessions bounds the live sessions of a stateful HTTP
	// endpoint (HTTPOptions.MaxSessions): about 45 KB each.
	DefaultMaxSessions = 1000
	// MaxBodyBytesInFlight bounds the request bodies being received at
	// once, each counted at its declared length (MaxRequestBodyBytes when
	// it declares none).
	MaxBodyBytesInFlight = 32 * MaxRequestBodyBytes
	// BodyTimeout bounds how long a request's body may take to arrive.
	BodyTimeout = 30 * time.Second
	// MaxHeaderBytes bounds a request's headers: MCP's are a few hundred
	// bytes (net/http's default is 1 MB).
	MaxHeaderBytes = 64 << 10
	// IdleTimeout closes a keep-alive connection with no request.
	IdleTimeout = 2 * time.Minute
	// ReadHeaderTimeout bounds how long a request's headers may take.
	ReadHeaderTimeout = 10 * time.Second
	// MaxConnections bounds the connections open at once.
	MaxConnections = 4096
)

// bodyTimeout is BodyTimeout; tests shorten it.
var bodyTimeout = BodyTimeout

// ConfigureHTTPServer sets hs's bounds on what a client can make the
// server hold (see above), and returns ln limited to MaxConnections.
func ConfigureHTTPServer(hs *http.Server, ln net.Listener) net.Listener {
	hs.ReadHeaderTimeout = ReadHeaderTimeout
	hs.MaxHeaderBytes = MaxHeaderBytes
	hs.IdleTimeout = IdleTimeout
	return &limitedListener{Listener: ln, slots: make(chan struct{}, MaxConnections)}
}

// limitedListener accepts at most cap(slots) connections open at once.
type limitedListener struct {
	net.Listener
	slots chan struct{}
}

func (l *limitedListener) Accept() (net.Conn, error) {
	l.slots <- struct{}{}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// bodyBudget counts the request bodies being received.
type bodyBudget struct {
	mu          sync.Mutex
	used, limit int64
}

func (b *bodyBudget) reserve(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

func (b *bodyBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// BoundBodies returns next behind a budget of MaxBodyBytesInFlight for the
// request bodies being received, each of which must arrive within
// BodyTimeout. Handler's is already bounded; other HTTP servers of the
// gateway (the completion-API proxy) use it.
func BoundBodies(next http.Handler) http.Handler {
	return limitBodies(&bodyBudget{limit: MaxBodyBytesInFlight}, next)
}

// limitBodies refuses a request whose body does not fit in the budget, and
// gives its body BodyTimeout to arrive.
func limitBodies(b *bodyBudget, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			next.ServeHTTP(w, r)
			return
		}
		n := r.ContentLength
		if n < 0 || n > MaxRequestBodyBytes {
			n = MaxRequestBodyBytes // what the handler reads at most
		}
		if !b.reserve(n) {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "the gateway is receiving too many large requests at once; retry in a moment", http.StatusServiceUnavailable)
			return
		}
		body := &timedBody{ReadCloser: r.Body, rc: http.NewResponseController(w), release: func() { b.release(n) }}
		defer body.done()
		body.rc.SetReadDeadline(time.Now().Add(bodyTimeout))
		r.Body = body
		next.ServeHTTP(w, r)
	})
}

// timedBody gives back its reservation once the body has been read or
// abandoned, and lifts the read deadline once it has been read to its end:
// the connection's later reads (the next request, noticing the client
// leave during a long call) must not time out. A body not read to its end
// keeps the deadline, so that the server's own read of what is left of it
// (to reuse the connection) ends there too.
type timedBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	once    sync.Once
	release func()
}

func (b *timedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.rc.SetReadDeadline(time.Time{})
	}
	if err != nil {
		b.done()
	}
	return n, err
}

func (b *timedBody) Close() error {
	b.done()
	return b.ReadCloser.Close()
}

func (b *timedBody) done() { b.once.Do(b.release) }

// sessionUse is what capSessions knows of a live session.
type sessionUse struct {
	last time.Time // when its last request ended (or began)
	busy int       // requests in progress
}

// capSessions keeps at most maxSessions sessions of a stateful HTTP
// endpoint: a session's first request, once over the bound, closes the
// session idle the longest (no request in progress), or, if every other
// session is busy, the new one.
func (s *Server) capSessions(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, _ := req.GetSession().(*mcp.ServerSession)
		max := int(s.maxSessions.Load())
		if ss == nil || max <= 0 || s.stateless.Load() {
			return next(ctx, method, req)
		}
		s.sessMu.Lock()
		u := s.sessUse[ss]
		if u == nil {
			u = &sessionUse{}
			s.sessUse[ss] = u
			go func() {
				ss.Wait()
				s.sessMu.Lock()
				delete(s.sessUse, ss)
				s.sessMu.Unlock()
			}()
			if len(s.sessUse) > max {
				victim := ss
				var oldest time.Time
				for other, ou := range s.sessUse {
					if other != ss && ou.busy == 0 && (victim == ss || ou.last.Before(oldest)) {
						victim, oldest = other, ou.last
					}
				}
				delete(s.sessUse, victim)
				go victim.Close()
				if victim == ss {
					s.sessMu.Unlock()
					return nil, errors.New("the gateway has too many sessions in use; retry later")
				}
			}
		}
		u.busy++
		u.last = time.Now()
		s.sessMu.Unlock()
		defer func() {
			s.sessMu.Lock()
			u.busy--
			u.last = time.Now()
			s.sessMu.Unlock()
		}()
		return next(ctx, method, req)
	}
}
