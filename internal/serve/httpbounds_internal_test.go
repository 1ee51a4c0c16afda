package serve

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// One client opened 38,771 sessions in 20 s (1.75 GB, kept for the idle
// timeout). Past MaxSessions, a new session closes the one idle the
// longest, whose client gets 404 (and starts again, as the protocol says);
// a session with a request in progress is never closed for it.
func TestSessionsAreCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := upstream.New(nil, nil)
		defer m.Close()
		s := New(run.New(config.Default(), catalog.New(m), m, nil), m, nil)
		h := s.Handler(HTTPOptions{MaxSessions: 3, SessionTimeout: time.Hour})
		var ids []string
		for range 3 {
			ids = append(ids, initSession(t, h))
			time.Sleep(time.Second)
		}
		if code := ping(t, h, ids[0]); code != http.StatusOK { // the oldest is now the most recent
			t.Fatalf("ping: %d", code)
		}
		time.Sleep(time.Second)
		for range 20 {
			ids = append(ids, initSession(t, h))
			time.Sleep(time.Second)
		}
		synctest.Wait()
		live := 0
		for range s.mcp.Sessions() {
			live++
		}
		if live > 3 {
			t.Errorf("%d sessions live, want at most 3", live)
		}
		if code := ping(t, h, ids[1]); code != http.StatusNotFound {
			t.Errorf("the session idle the longest answered %d, want 404 (closed)", code)
		}
		if code := ping(t, h, ids[len(ids)-1]); code != http.StatusOK {
			t.Errorf("the newest session answered %d", code)
		}
		s.sessMu.Lock()
		tracked := len(s.sessUse)
		s.sessMu.Unlock()
		if tracked > 3 {
			t.Errorf("%d sessions tracked", tracked)
		}
		time.Sleep(2 * time.Hour) // the rest close idle, so that the bubble can end
		synctest.Wait()
	})
}

// Request bodies being received hold at most the budget: one that does not
// fit is refused at once with 503, and the budget is back once a body has
// been read.
func TestBodyBudget(t *testing.T) {
	t.Parallel()
	got := make(chan struct{}, 4)
	h := limitBodies(&bodyBudget{limit: 100}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		got <- struct{}{}
	}))
	pr, pw := io.Pipe()
	slow := httptest.NewRequestWithContext(context.Background(), "POST", "/mcp", pr)
	slow.ContentLength = 80
	done := make(chan int)
	go func() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, slow)
		done <- w.Code
	}()
	pw.Write([]byte("{"))
	send := func() int {
		req := httptest.NewRequestWithContext(context.Background(), "POST", "/mcp", strings.NewReader(strings.Repeat("x", 80)))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w.Code
	}
	if code := send(); code != http.StatusServiceUnavailable {
		t.Errorf("a body beyond the budget: %d, want 503", code)
	}
	pw.Close()
	<-done
	if code := send(); code != http.StatusOK {
		t.Errorf("after the first body was read: %d, want 200", code)
	}
}

// A body that never arrives is cut at the body deadline: the client gets
// an answer and the connection is closed (2,000 such requests stayed open
// for ever).
func TestSlowBodyIsCut(t *testing.T) {
	old := bodyTimeout
	bodyTimeout = 50 * time.Millisecond
	t.Cleanup(func() { bodyTimeout = old })
	m := upstream.New(nil, nil)
	defer m.Close()
	s := New(run.New(config.Default(), catalog.New(m), m, nil), m, nil)
	ts := httptest.NewServer(s.Handler(HTTPOptions{}))
	defer ts.Close()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{"))
	c.SetReadDeadline(time.Now().Add(time.Minute)) // the hang guard
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the connection is still open (%v)", err)
	}
}
