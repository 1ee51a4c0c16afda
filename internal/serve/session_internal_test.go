package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// Streamable HTTP sessions that are opened and abandoned without DELETE
// are closed once idle for SessionTimeout, and release everything: the
// SDK's session (its goroutines; the bubble could not end with one left
// blocked), and codemode's own per-session state (the declarations a
// session was sent). A session in use is kept.
func TestIdleSessionsAreClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := upstream.New(nil, nil)
		defer m.Close()
		cfg := config.Default()
		s := New(run.New(cfg, catalog.New(m), m, nil), m, nil)
		h := s.Handler(HTTPOptions{SessionTimeout: time.Minute})
		rs := s.surfaces[0].Surface.(*runSurface)

		const n = 50
		ids := make([]string, n)
		for i := range ids {
			ids[i] = initSession(t, h)
		}
		// Each session is sent declarations, as a run of the run surface
		// does when the description carries only the index.
		count := 0
		for ss := range s.mcp.Sessions() {
			rs.deferredDeclarations(t.Context(), &mcp.CallToolRequest{Session: ss}, []string{"x"})
			count++
		}
		if count != n || rs.deliveredLen() != n {
			t.Fatalf("%d sessions, %d with declarations; want %d", count, rs.deliveredLen(), n)
		}

		// One session keeps being used; the others are abandoned.
		for range 4 {
			time.Sleep(30 * time.Second)
			if code := ping(t, h, ids[0]); code != http.StatusOK {
				t.Fatalf("a session in use answered %d", code)
			}
		}
		synctest.Wait()
		left := 0
		for range s.mcp.Sessions() {
			left++
		}
		if left != 1 || rs.deliveredLen() != 1 {
			t.Errorf("after two idle minutes: %d sessions, %d with declarations; want only the one in use", left, rs.deliveredLen())
		}
		if code := ping(t, h, ids[1]); code != http.StatusNotFound {
			t.Errorf("an abandoned session answered %d, want 404 (closed)", code)
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if rs.deliveredLen() != 0 {
			t.Errorf("%d sessions' declarations are still kept", rs.deliveredLen())
		}
	})
}

func (r *runSurface) deliveredLen() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.delivered)
}

func post(t *testing.T, h http.Handler, session, body string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequestWithContext(context.Background(), "POST", "/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// initSession opens a session and returns its id.
func initSession(t *testing.T, h http.Handler) string {
	t.Helper()
	w := post(t, h, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	id := w.Header().Get("Mcp-Session-Id")
	if w.Code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q %s", w.Code, id, w.Body)
	}
	if w := post(t, h, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); w.Code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", w.Code, w.Body)
	}
	return id
}

func ping(t *testing.T, h http.Handler, session string) int {
	t.Helper()
	return post(t, h, session, `{"jsonrpc":"2.0","id":2,"method":"ping"}`).Code
}
