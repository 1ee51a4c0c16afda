package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tests against in-process go-sdk servers, reached in memory (Options.Dial)
// or over real HTTP on httptest.

// transports lists the ways a test can reach an in-process server. Each
// returns the config entry for it; mw, if set, wraps the HTTP handler.
var transports = []struct {
	name  string
	serve func(t *testing.T, srv *mcp.Server, mw func(http.Handler) http.Handler) (config.Server, *Options)
}{
	{"memory", func(t *testing.T, srv *mcp.Server, _ func(http.Handler) http.Handler) (config.Server, *Options) {
		return config.Server{ID: "s", Name: "s"}, &Options{Dial: DialInMemory(map[string]*mcp.Server{"s": srv})}
	}},
	{"memory-2025-11-25", func(t *testing.T, srv *mcp.Server, _ func(http.Handler) http.Handler) (config.Server, *Options) {
		return config.Server{ID: "s", Name: "s"}, &Options{Dial: DialInMemory(map[string]*mcp.Server{"s": srv}), ProtocolVersion: "2025-11-25"}
	}},
	{"streamable", func(t *testing.T, srv *mcp.Server, mw func(http.Handler) http.Handler) (config.Server, *Options) {
		url := serveHTTP(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil), mw)
		return config.Server{ID: "s", Name: "s", Transport: config.Streamable, URL: url}, &Options{}
	}},
	{"sse", func(t *testing.T, srv *mcp.Server, mw func(http.Handler) http.Handler) (config.Server, *Options) {
		url := serveHTTP(t, mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil), mw)
		return config.Server{ID: "s", Name: "s", Transport: config.SSE, URL: url}, &Options{}
	}},
}

func serveHTTP(t *testing.T, h http.Handler, mw func(http.Handler) http.Handler) string {
	if mw != nil {
		h = mw(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

func addTool(srv *mcp.Server, name string) {
	mcp.AddTool(srv, &mcp.Tool{Name: name, Description: "tool " + name}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return text(name), nil, nil
	})
}

// A tools/list_changed notification makes the next Snapshot refetch; the
// old snapshot is untouched.
func TestListChanged(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
			addTool(srv, "b")
			addTool(srv, "a")
			cfg, opts := tr.serve(t, srv, nil)
			changed := make(chan string, 10)
			opts.OnToolsChanged = func(id string) { changed <- id }
			m, _ := newManager(t, []config.Server{cfg}, opts)

			s1 := snapshot(t, m, "s")
			if got := toolNames(s1); !slices.Equal(got, []string{"a", "b"}) || s1.Generation == 0 {
				t.Fatalf("first snapshot: %v, generation %d", got, s1.Generation)
			}
			if again := snapshot(t, m, "s"); again != s1 {
				t.Fatal("a second Snapshot without a change refetched")
			}
			if len(changed) != 0 {
				t.Fatal("OnToolsChanged before any change")
			}
			addTool(srv, "c")
			if id := testutil.Wait(t, changed, "OnToolsChanged after the server added a tool"); id != "s" {
				t.Fatalf("OnToolsChanged(%q)", id)
			}
			s2 := snapshot(t, m, "s")
			if want := tr.name; want == "memory" && s2.ProtocolVersion != "2026-07-28" || want == "memory-2025-11-25" && s2.ProtocolVersion != "2025-11-25" {
				t.Errorf("negotiated %s", s2.ProtocolVersion)
			}
			if got := toolNames(s2); !slices.Equal(got, []string{"a", "b", "c"}) || s2.Generation <= s1.Generation {
				t.Fatalf("after list_changed: %v, generation %d (was %d)", got, s2.Generation, s1.Generation)
			}
			if got := toolNames(s1); !slices.Equal(got, []string{"a", "b"}) {
				t.Fatalf("the old snapshot changed: %v", got)
			}
			if st := m.Status("s"); st.Generation != s2.Generation {
				t.Errorf("Status.Generation = %d, want %d", st.Generation, s2.Generation)
			}
			if got := call(t, m, "s", "c", nil); got != "c" {
				t.Errorf("new tool: %q", got)
			}
		})
	}
}

// blockingServer has a tool that blocks until its context ends and records
// that, and records notifications/cancelled.
type blockingServer struct {
	srv       *mcp.Server
	started   chan struct{}
	cancelled chan struct{} // the handler saw its ctx end
	notified  chan struct{} // notifications/cancelled arrived
	onceN     sync.Once
}

func newBlockingServer() *blockingServer {
	b := &blockingServer{
		srv:       mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil),
		started:   make(chan struct{}, 1),
		cancelled: make(chan struct{}, 1),
		notified:  make(chan struct{}),
	}
	addTool(b.srv, "quick")
	mcp.AddTool(b.srv, &mcp.Tool{Name: "block"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		b.started <- struct{}{}
		<-ctx.Done()
		b.cancelled <- struct{}{}
		return nil, nil, ctx.Err()
	})
	b.srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/cancelled" {
				b.onceN.Do(func() { close(b.notified) })
			}
			return next(ctx, method, req)
		}
	})
	return b
}

func (b *blockingServer) expectCancelled(t *testing.T) {
	t.Helper()
	for what, ch := range map[string]chan struct{}{"notifications/cancelled": b.notified, "handler ctx cancellation": b.cancelled} {
		testutil.Wait(t, ch, "the upstream's seeing "+what)
	}
}

// Cancelling a call (the run ended) or hitting the call timeout cancels the
// request upstream, and the session stays usable.
func TestCancellation(t *testing.T) {
	t.Parallel()
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			t.Parallel()
			t.Run("caller", func(t *testing.T) {
				t.Parallel()
				b := newBlockingServer()
				cfg, opts := tr.serve(t, b.srv, nil)
				m, _ := newManager(t, []config.Server{cfg}, opts)
				ctx, cancel := context.WithCancel(context.Background())
				errc := make(chan error, 1)
				go func() {
					_, err := m.CallTool(ctx, "s", "block", nil)
					errc <- err
				}()
				<-b.started
				cancel()
				err := <-errc
				asError(t, err, "s", Canceled)
				if !errors.Is(err, context.Canceled) {
					t.Errorf("errors.Is(err, context.Canceled) = false: %v", err)
				}
				b.expectCancelled(t)
				if got := call(t, m, "s", "quick", nil); got != "quick" {
					t.Errorf("after cancel: %q", got)
				}
			})
			t.Run("timeout", func(t *testing.T) {
				t.Parallel()
				b := newBlockingServer()
				cfg, opts := tr.serve(t, b.srv, nil)
				cfg.CallTimeout = 200 * time.Millisecond
				m, _ := newManager(t, []config.Server{cfg}, opts)
				_, err := m.CallTool(context.Background(), "s", "block", nil)
				if e := asError(t, err, "s", Timeout); e.Hint == "" {
					t.Error("no hint")
				}
				b.expectCancelled(t)
				if got := call(t, m, "s", "quick", nil); got != "quick" {
					t.Errorf("after timeout: %q", got)
				}
			})
		})
	}
}

// authMiddleware accepts "Bearer good" unless reject is set, and counts the
// requests that lacked the extra header.
type authMiddleware struct {
	reject        atomic.Bool
	status        int
	requests      atomic.Int32
	missingHeader atomic.Int32
}

func (a *authMiddleware) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.requests.Add(1)
		if r.Header.Get("X-Extra") != "yes" {
			a.missingHeader.Add(1)
		}
		if r.Header.Get("Authorization") != "Bearer good" || a.reject.Load() {
			w.Header().Set("WWW-Authenticate", `Bearer realm="test"`)
			http.Error(w, "invalid token", a.status)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// A 401 or 403 from a remote upstream, at connect or at call time, is an
// Auth error carrying the status; configured headers go on every request.
func TestAuth(t *testing.T) {
	t.Parallel()
	for _, tr := range transports[2:] { // HTTP only
		for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
			t.Run(tr.name+"/"+http.StatusText(status), func(t *testing.T) {
				t.Parallel()
				srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
				addTool(srv, "a")
				auth := &authMiddleware{status: status}
				cfg, opts := tr.serve(t, srv, auth.wrap)

				bad := cfg
				bad.ID, bad.Name = "bad", "bad"
				bad.Headers = map[string]string{"Authorization": "Bearer wrong", "X-Extra": "yes"}
				good := cfg
				good.Headers = map[string]string{"Authorization": "Bearer good", "X-Extra": "yes"}
				m, _ := newManager(t, []config.Server{bad, good}, opts)

				_, err := m.Snapshot(context.Background(), "bad")
				e := asError(t, err, "bad", Auth)
				var httpErr *HTTPStatusError
				if !errors.As(err, &httpErr) || httpErr.StatusCode != status || httpErr.WWWAuthenticate != `Bearer realm="test"` ||
					httpErr.Body != "invalid token" || e.Hint == "" {
					t.Fatalf("connect with bad credentials: %v (%+v)", err, httpErr)
				}
				if st := m.Status("bad"); st.State != StateBackoff || st.Err.Kind != Auth {
					t.Errorf("Status(bad) = %+v", st)
				}

				if got := call(t, m, "s", "a", nil); got != "a" {
					t.Fatalf("good credentials: %q", got)
				}
				auth.reject.Store(true) // e.g. the token was revoked
				_, err = m.CallTool(context.Background(), "s", "a", nil)
				asError(t, err, "s", Auth)
				if !errors.As(err, &httpErr) || httpErr.StatusCode != status {
					t.Fatalf("call with revoked credentials: %v", err)
				}
				if n := auth.missingHeader.Load(); n != 0 || auth.requests.Load() < 4 {
					t.Errorf("%d of %d requests lacked the configured header", n, auth.requests.Load())
				}
			})
		}
	}
}

// Status reports connecting while an attempt is in flight.
func TestStatusConnecting(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	inMem := DialInMemory(map[string]*mcp.Server{"s": srv})
	m, _ := newManager(t, []config.Server{{ID: "s", Name: "s"}}, &Options{Dial: func(ctx context.Context, s config.Server) (mcp.Transport, error) {
		<-release
		return inMem(ctx, s)
	}})
	done := make(chan error, 1)
	go func() {
		_, err := m.Snapshot(context.Background(), "s")
		done <- err
	}()
	waitFor(t, "connecting", func() bool { return m.Status("s").State == StateConnecting })
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if st := m.Status("s"); st.State != StateConnected || st.PID != 0 || st.Generation == 0 {
		t.Errorf("Status = %+v", st)
	}
}

// Snapshots taken while the tool list keeps changing never go backwards,
// and once the changes stop the snapshot has every tool.
func TestListChangedConcurrent(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	addTool(srv, "t00")
	m, _ := newManager(t, []config.Server{{ID: "s", Name: "s"}}, &Options{Dial: DialInMemory(map[string]*mcp.Server{"s": srv})})
	snapshot(t, m, "s")
	const adds = 20
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var last *Snapshot
			for {
				select {
				case <-stop:
					return
				default:
				}
				s, err := m.Snapshot(context.Background(), "s")
				if err != nil {
					t.Error(err)
					return
				}
				if last != nil && (s.Generation < last.Generation || len(s.Tools) < len(last.Tools)) {
					t.Errorf("went backwards: generation %d (%d tools) after %d (%d tools)", s.Generation, len(s.Tools), last.Generation, len(last.Tools))
				}
				if !slices.IsSortedFunc(s.Tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) }) {
					t.Error("unsorted tools")
				}
				last = s
			}
		})
	}
	for i := 1; i <= adds; i++ {
		addTool(srv, fmt.Sprintf("t%02d", i))
		runtime.Gosched() // let the readers interleave
	}
	// The last notification may still be in flight: wait for it to land.
	waitFor(t, "all tools", func() bool { return len(snapshot(t, m, "s").Tools) == adds+1 })
	close(stop)
	wg.Wait()
}

// A remote server that is not there is Unavailable; one that answers with
// something other than MCP fails to start; neither affects the other.
func TestRemoteUnreachable(t *testing.T) {
	t.Parallel()
	dead := "http://127.0.0.1:" + fmt.Sprint(freePort(t)) + "/mcp"
	notMCP := serveHTTP(t, http.NotFoundHandler(), nil)
	m, _ := newManager(t, []config.Server{
		{ID: "dead", Name: "dead", Transport: config.Streamable, URL: dead},
		{ID: "deadsse", Name: "deadsse", Transport: config.SSE, URL: dead},
		{ID: "web", Name: "web", Transport: config.Streamable, URL: notMCP},
		{ID: "websse", Name: "websse", Transport: config.SSE, URL: notMCP},
	}, nil)
	for _, id := range []string{"dead", "deadsse"} {
		_, err := m.Snapshot(context.Background(), id)
		if e := asError(t, err, id, Unavailable); !strings.Contains(e.Hint, dead) {
			t.Errorf("%s: hint %q", id, e.Hint)
		}
	}
	for _, id := range []string{"web", "websse"} {
		_, err := m.Snapshot(context.Background(), id)
		if e := asError(t, err, id, StartFailed); !strings.Contains(e.Hint, "url") {
			t.Errorf("%s: %v, hint %q", id, err, e.Hint)
		}
	}
}

// The overhead of the Manager over an in-memory go-sdk session.
func BenchmarkCallToolInMemory(b *testing.B) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	addTool(srv, "a")
	m := New([]config.Server{{ID: "s", Name: "s"}}, &Options{Dial: DialInMemory(map[string]*mcp.Server{"s": srv})})
	defer m.Close()
	ctx := context.Background()
	if _, err := m.Snapshot(ctx, "s"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.CallTool(ctx, "s", "a", nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSnapshotCached(b *testing.B) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	addTool(srv, "a")
	m := New([]config.Server{{ID: "s", Name: "s"}}, &Options{Dial: DialInMemory(map[string]*mcp.Server{"s": srv})})
	defer m.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Snapshot(ctx, "s"); err != nil {
			b.Fatal(err)
		}
	}
}

// A remote server that answers a call as JSON (not as an event stream) with
// more than the SDK reads in one message: the call fails with an error that
// says so, and the next call reconnects. The SDK reads a JSON answer whole:
// a server sending gigabytes took the gateway's memory with it.
func TestHugeJSONAnswerIsRefused(t *testing.T) {
	t.Parallel()
	srv := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	addTool(srv, "small")
	srv.AddTool(&mcp.Tool{Name: "huge", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", maxMessageBytes+1)}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{JSONResponse: true})
	m, _ := newManager(t, []config.Server{{ID: "s", Name: "s", Transport: config.Streamable, URL: serveHTTP(t, h, nil)}}, nil)
	if got := call(t, m, "s", "small", nil); got != "small" {
		t.Fatalf("small: %q", got)
	}
	_, err := m.CallTool(context.Background(), "s", "huge", nil)
	e := asError(t, err, "s", Died)
	if !errors.Is(err, ErrMessageTooLarge) || !strings.Contains(e.Hint, "ask the tool for less") {
		t.Fatalf("error %q (hint %q), want ErrMessageTooLarge with a hint to ask for less", err, e.Hint)
	}
	if got := call(t, m, "s", "small", nil); got != "small" {
		t.Errorf("the next call = %q, want the server reconnected at once", got)
	}

	// An error status with a 256 MiB body: the SDK reads it whole, to look
	// for a JSON-RPC error in it. The gateway stops reading (and the
	// server's writes fail) past the bound.
	var wrote atomic.Int64
	const body = 256 << 20
	endless := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusInternalServerError)
		chunk := []byte(strings.Repeat("<p>error</p>", 1000))
		for wrote.Load() < body {
			n, err := w.Write(chunk)
			wrote.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(endless.Close)
	m2, _ := newManager(t, []config.Server{{ID: "e", Name: "e", Transport: config.Streamable, URL: endless.URL}}, nil)
	if _, err := m2.Snapshot(context.Background(), "e"); err == nil {
		t.Fatal("a server answering 500 connected")
	}
	if n := wrote.Load(); n >= body {
		t.Errorf("the gateway read the whole %d MiB error body", n>>20)
	}
}
