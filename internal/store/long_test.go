package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/store"
)

// A task is created working, read only by its client, finished once (the
// first end wins), cancelled on request, listed in pages, and gone once
// its TTL has passed.
func TestTasks(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *store.Store, c *clock) {
		ctx := context.Background()
		ts := s.Tasks()
		a := must[store.Task](t)(ts.Create(ctx, store.Task{ID: "a", Client: "alice", Tool: "codemode_run", PollInterval: time.Second, TTL: time.Hour}))
		if a.Status != store.TaskWorking {
			t.Fatalf("created %+v", a)
		}
		if _, ok, _ := ts.Get(ctx, "bob", "a"); ok {
			t.Error("another client reads the task")
		}
		must[bool](t)(ts.Finish(ctx, "a", store.TaskCompleted, "done", json.RawMessage(`{"content":[]}`), nil))
		if ended := must[bool](t)(ts.Finish(ctx, "a", store.TaskFailed, "", nil, json.RawMessage(`{}`))); ended {
			t.Error("a second end was recorded")
		}
		got, ok, err := ts.Get(ctx, "alice", "a")
		if err != nil || !ok || got.Status != store.TaskCompleted || string(got.Result) != `{"content":[]}` || got.Error != nil || got.PollInterval != time.Second {
			t.Fatalf("get: %+v %v %v", got, ok, err)
		}

		must[store.Task](t)(ts.Create(ctx, store.Task{ID: "b", Client: "alice", Tool: "codemode_run", TTL: time.Minute}))
		if r := must[bool](t)(ts.CancelRequested(ctx, "b")); r {
			t.Error("cancel requested at creation")
		}
		if _, ok, _ := ts.RequestCancel(ctx, "bob", "b"); ok {
			t.Error("another client cancels the task")
		}
		b, ok, err := ts.RequestCancel(ctx, "alice", "b")
		if err != nil || !ok || !b.CancelRequested || !must[bool](t)(ts.CancelRequested(ctx, "b")) {
			t.Fatalf("cancel: %+v %v %v", b, ok, err)
		}
		must[store.Task](t)(ts.Create(ctx, store.Task{ID: "c", Client: "alice", Tool: "codemode_run"}))

		page, more, err := ts.List(ctx, "alice", "", 2)
		if err != nil || !more || len(page) != 2 || page[0].ID != "a" || page[1].ID != "b" {
			t.Fatalf("page 1: %+v %v %v", page, more, err)
		}
		page, more, err = ts.List(ctx, "alice", "b", 2)
		if err != nil || more || len(page) != 1 || page[0].ID != "c" {
			t.Fatalf("page 2: %+v %v %v", page, more, err)
		}
		c.advance(2 * time.Minute)
		if _, ok, _ := ts.Get(ctx, "alice", "b"); ok {
			t.Error("an expired task is still there")
		}
		if _, ok, _ := ts.Get(ctx, "alice", "c"); !ok {
			t.Error("a task without a TTL expired")
		}
	})
}

// A result is read back whole by its client and session (any session
// when it was kept for none), by no one else, and not after it expired.
func TestResults(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *store.Store, c *clock) {
		ctx := context.Background()
		rs := s.Results()
		big := strings.Repeat("é", 3<<20)
		must[store.Result](t)(rs.Put(ctx, store.Result{ID: "r1", Client: "alice", Session: "s1", MIMEType: "application/json", Data: big}, time.Hour, 0))
		must[store.Result](t)(rs.Put(ctx, store.Result{ID: "r2", Client: "alice", MIMEType: "text/plain", Data: "x"}, 2*time.Hour, 0))
		r, ok, err := rs.Get(ctx, "alice", "s1", "r1")
		if err != nil || !ok || r.Data != big || r.MIMEType != "application/json" {
			t.Fatalf("get: %v %v (%d bytes)", ok, err, len(r.Data))
		}
		for _, who := range [][2]string{{"alice", "s2"}, {"bob", "s1"}} {
			if _, ok, _ := rs.Get(ctx, who[0], who[1], "r1"); ok {
				t.Errorf("%v reads it", who)
			}
		}
		if _, ok, _ := rs.Get(ctx, "alice", "s9", "r2"); !ok {
			t.Error("a result kept for no session is not read by the client's sessions")
		}
		c.advance(90 * time.Minute)
		if _, ok, _ := rs.Get(ctx, "alice", "s1", "r1"); ok {
			t.Error("an expired result is still there")
		}
	})
}

// A client's kept results stay within its quota: the oldest go first, the
// other clients' stay, and a result larger than the quota is not kept.
func TestResultsQuota(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *store.Store, c *clock) {
		ctx := context.Background()
		rs := s.Results()
		put := func(id, client string, n int) error {
			_, err := rs.Put(ctx, store.Result{ID: id, Client: client, MIMEType: "text/plain", Data: strings.Repeat("x", n)}, time.Hour, 100)
			return err
		}
		for i, id := range []string{"q1", "q2", "q3"} {
			if err := put(id, "alice", 40); err != nil {
				t.Fatal(err)
			}
			if err := put(fmt.Sprint("b", i), "bob", 40); err != nil {
				t.Fatal(err)
			}
			c.advance(time.Second)
		}
		for id, want := range map[string]bool{"q1": false, "q2": true, "q3": true} {
			if _, ok, _ := rs.Get(ctx, "alice", "", id); ok != want {
				t.Errorf("%s kept: %v, want %v", id, ok, want)
			}
		}
		if _, ok, _ := rs.Get(ctx, "bob", "", "b2"); !ok {
			t.Error("another client's result was evicted")
		}
		if err := put("huge", "alice", 101); !errors.Is(err, store.ErrResultQuota) {
			t.Errorf("a result over the quota: %v", err)
		}
		if _, ok, _ := rs.Get(ctx, "alice", "", "q3"); !ok {
			t.Error("a refused result evicted a kept one")
		}
	})
}
