package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

func TestMain(m *testing.M) {
	if os.Getenv("CODEMODE_STORE_HELPER") != "" {
		os.Exit(helperProcess())
	}
	code := m.Run()
	testutil.StopPostgres()
	os.Exit(code)
}

// clock is an injected clock for expiry tests.
type clock struct{ ms atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ms.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli())
	return c
}
func (c *clock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *clock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// forEachBackend runs f against a fresh SQLite store and a fresh
// PostgreSQL database (skipped, visibly, without PostgreSQL): the one
// suite both backends pass.
func forEachBackend(t *testing.T, f func(t *testing.T, s *store.Store, c *clock)) {
	t.Run("sqlite", func(t *testing.T) {
		c := newClock()
		s := store.New(&store.Options{Dir: t.TempDir(), Now: c.now})
		t.Cleanup(func() { s.Close() })
		f(t, s, c)
	})
	t.Run("postgres", func(t *testing.T) {
		url := testutil.Postgres(t)
		c := newClock()
		s := store.New(&store.Options{URL: url, Now: c.now})
		t.Cleanup(func() { s.Close() })
		f(t, s, c)
	})
}

func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestMigrations(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *store.Store, _ *clock) {
		ctx := context.Background()
		if err := s.Ready(ctx); err != nil {
			t.Fatal(err)
		}
		v := must[map[string]int](t)(s.Versions(ctx))
		for _, f := range []string{"kv", "thoughts", "knowledge"} {
			if v[f] < 1 {
				t.Errorf("feature %s at version %d, want ≥ 1 (all: %v)", f, v[f], v)
			}
		}
	})
}

func TestMigrationsIdempotentAcrossOpens(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for i := range 3 {
		s := store.New(&store.Options{Dir: dir})
		if _, err := s.KV().Set(ctx, "ns", "k", json.RawMessage(strconv.Itoa(i)), 0, store.KVLimits{}); err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	s := store.New(&store.Options{Dir: dir})
	defer s.Close()
	e, ok, err := s.KV().Get(ctx, "ns", "k")
	if err != nil || !ok || string(e.Value) != "2" {
		t.Fatalf("got %s %v %v, want 2", e.Value, ok, err)
	}
}

func TestKV(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *store.Store, c *clock) {
		ctx := context.Background()
		kv := s.KV()
		if _, ok, err := kv.Get(ctx, "a", "missing"); ok || err != nil {
			t.Fatalf("missing key: ok=%v err=%v", ok, err)
		}
		must[store.KVEntry](t)(kv.Set(ctx, "a", "user:1", json.RawMessage(`{"name":"Ada","tags":["x"]}`), 0, store.KVLimits{}))
		e, ok, err := kv.Get(ctx, "a", "user:1")
		if err != nil || !ok || string(e.Value) != `{"name":"Ada","tags":["x"]}` || !e.ExpiresAt.IsZero() {
			t.Fatalf("get: %+v %v %v", e, ok, err)
		}
		// Namespaces never see each other's keys.
		if _, ok, _ := kv.Get(ctx, "b", "user:1"); ok {
			t.Fatal("namespace b sees a's key")
		}
		// Overwrite.
		must[store.KVEntry](t)(kv.Set(ctx, "a", "user:1", json.RawMessage(`2`), 0, store.KVLimits{}))
		if e, _, _ := kv.Get(ctx, "a", "user:1"); string(e.Value) != "2" {
			t.Fatalf("overwrite: %s", e.Value)
		}
		// Delete.
		if d, err := kv.Delete(ctx, "a", "user:1"); !d || err != nil {
			t.Fatalf("delete: %v %v", d, err)
		}
		if d, err := kv.Delete(ctx, "a", "user:1"); d || err != nil {
			t.Fatalf("second delete: %v %v", d, err)
		}
		if u := must[int64](t)(kv.Usage(ctx, "a")); u != 0 {
			t.Fatalf("usage after delete = %d", u)
		}
		// TTL, on the injected clock.
		must[store.KVEntry](t)(kv.Set(ctx, "a", "tmp", json.RawMessage(`true`), 10*time.Second, store.KVLimits{}))
		if _, ok, _ := kv.Get(ctx, "a", "tmp"); !ok {
			t.Fatal("ttl key gone before expiry")
		}
		c.advance(10 * time.Second)
		if _, ok, _ := kv.Get(ctx, "a", "tmp"); ok {
			t.Fatal("ttl key still there at expiry")
		}
	})
}

func TestKVList(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *store.Store, c *clock) {
		ctx := context.Background()
		kv := s.KV()
		for _, k := range []string{"p:3", "p:1", "p:2", "q:1", "p", "pé", "o"} {
			must[store.KVEntry](t)(kv.Set(ctx, "ns", k, json.RawMessage(`"`+k+`"`), 0, store.KVLimits{}))
		}
		must[store.KVEntry](t)(kv.Set(ctx, "ns", "p:9", json.RawMessage(`0`), time.Second, store.KVLimits{}))
		c.advance(2 * time.Second) // p:9 expired: not listed
		var keys []string
		after := ""
		for page := 0; ; page++ {
			es, more, err := kv.List(ctx, "ns", "p:", after, 2, true)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range es {
				keys = append(keys, e.Key)
				if string(e.Value) != `"`+e.Key+`"` {
					t.Errorf("value of %s = %s", e.Key, e.Value)
				}
			}
			if !more {
				break
			}
			after = es[len(es)-1].Key
			if page > 5 {
				t.Fatal("pagination does not end")
			}
		}
		if got := strings.Join(keys, ","); got != "p:1,p:2,p:3" {
			t.Fatalf("keys = %s", got)
		}
		all, more, _ := kv.List(ctx, "ns", "", "", 100, false)
		var names []string
		for _, e := range all {
			names = append(names, e.Key)
			if e.Value != nil {
				t.Errorf("values loaded without asking")
			}
		}
		if more || strings.Join(names, ",") != "o,p,p:1,p:2,p:3,pé,q:1" {
			t.Fatalf("all = %v more=%v", names, more)
		}
		pe, _, _ := kv.List(ctx, "ns", "p", "", 100, false)
		if len(pe) != 5 {
			t.Fatalf("prefix p: %d entries", len(pe))
		}
	})
}

func TestKVLimits(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *store.Store, c *clock) {
		ctx := context.Background()
		kv := s.KV()
		lim := store.KVLimits{MaxKeyBytes: 16, MaxValueBytes: 10, MaxNamespaceBytes: 30}
		_, err := kv.Set(ctx, "n", "k", json.RawMessage(`"0123456789"`), 0, lim)
		var le *store.LimitError
		if !errors.As(err, &le) || le.Limit != "maxValueBytes" || !strings.Contains(err.Error(), "maxValueBytes") {
			t.Fatalf("value limit: %v", err)
		}
		_, err = kv.Set(ctx, "n", strings.Repeat("k", 17), json.RawMessage(`1`), 0, lim)
		if !errors.As(err, &le) || le.Limit != "maxKeyBytes" {
			t.Fatalf("key limit: %v", err)
		}
		must[store.KVEntry](t)(kv.Set(ctx, "n", "a", json.RawMessage(`"12345678"`), 0, lim)) // 11 bytes
		must[store.KVEntry](t)(kv.Set(ctx, "n", "b", json.RawMessage(`"12345678"`), 0, lim)) // 22
		_, err = kv.Set(ctx, "n", "c", json.RawMessage(`"12345678"`), 0, lim)                // 33 > 30
		if !errors.As(err, &le) || le.Limit != "maxNamespaceBytes" || !strings.Contains(err.Error(), "maxNamespaceBytes") {
			t.Fatalf("namespace limit: %v", err)
		}
		if _, ok, _ := kv.Get(ctx, "n", "c"); ok {
			t.Fatal("refused value was written")
		}
		// Another namespace has its own budget.
		must[store.KVEntry](t)(kv.Set(ctx, "other", "c", json.RawMessage(`"12345678"`), 0, lim))
		// Shrinking a value is allowed; overwriting counts the difference.
		must[store.KVEntry](t)(kv.Set(ctx, "n", "a", json.RawMessage(`1`), 0, lim))
		if u := must[int64](t)(kv.Usage(ctx, "n")); u != 2+11 {
			t.Fatalf("usage = %d, want 13", u)
		}
		// Expired entries are purged to make room.
		must[store.KVEntry](t)(kv.Set(ctx, "n", "t", json.RawMessage(`"1234567"`), time.Second, lim)) // 13+10 = 23
		c.advance(time.Minute)
		must[store.KVEntry](t)(kv.Set(ctx, "n", "c", json.RawMessage(`"12345678"`), 0, lim)) // 13+11 = 24 once t is gone
		if u := must[int64](t)(kv.Usage(ctx, "n")); u != 24 {
			t.Fatalf("usage after purge = %d, want 24", u)
		}
	})
}

func TestThoughts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *store.Store, c *clock) {
		ctx := context.Background()
		th := s.Thoughts()
		ses := must[store.Session](t)(th.CreateSession(ctx, "a", "Debug retries", []string{"bug", "backend", "bug"}))
		if len(ses.Tags) != 2 || ses.Status != "active" {
			t.Fatalf("session %+v", ses)
		}
		for i, text := range []string{"Retry logic fails because the backoff multiplier resets.", "Checked the scheduler: it retries twice.", "Decision: keep the multiplier."} {
			c.advance(time.Second)
			got, after, err := th.AppendThought(ctx, "a", ses.ID, store.Append{Thought: store.Thought{Thought: text, Type: "reasoning", NextThoughtNeeded: i < 2}})
			if err != nil {
				t.Fatal(err)
			}
			if got.Number != i+1 || after.ThoughtCount != i+1 {
				t.Fatalf("thought %d numbered %d, count %d", i+1, got.Number, after.ThoughtCount)
			}
		}
		_, _, err := th.AppendThought(ctx, "a", ses.ID, store.Append{Thought: store.Thought{Thought: "x", Type: "reasoning", IsRevision: true, RevisesThought: 7}})
		var te *store.ThoughtError
		if !errors.As(err, &te) || !strings.Contains(err.Error(), "numbered 1 to 3") {
			t.Fatalf("revising a missing thought: %v", err)
		}
		rev, after, err := th.AppendThought(ctx, "a", ses.ID, store.Append{Thought: store.Thought{Thought: "Revised: the multiplier resets only on partial success.", Type: "reasoning", NextThoughtNeeded: true, IsRevision: true, RevisesThought: 1, Payload: json.RawMessage(`{"k":1}`)}, Title: "Retry bug", Tags: []string{"resolved"}})
		if err != nil || rev.Number != 4 || after.Title != "Retry bug" || after.Status != "active" || strings.Join(after.Tags, ",") != "resolved" {
			t.Fatalf("revision: %+v %+v %v", rev, after, err)
		}
		got, thoughts, err := th.Get(ctx, "a", ses.ID)
		if err != nil || len(thoughts) != 4 || got.ThoughtCount != 4 || thoughts[3].RevisesThought != 1 || string(thoughts[3].Payload) != `{"k":1}` {
			t.Fatalf("get: %+v %+v %v", got, thoughts, err)
		}
		if _, _, err := th.Get(ctx, "b", ses.ID); !errors.As(err, new(*store.NotFoundError)) {
			t.Fatalf("another namespace reads the session: %v", err)
		}
		if _, _, err := th.AppendThought(ctx, "b", ses.ID, store.Append{Thought: store.Thought{Thought: "x", Type: "reasoning"}}); !errors.As(err, new(*store.NotFoundError)) {
			t.Fatalf("another namespace appends: %v", err)
		}

		other := must[store.Session](t)(th.CreateSession(ctx, "a", "Other", []string{"bug"}))
		c.advance(time.Second)
		th.AppendThought(ctx, "a", other.ID, store.Append{Thought: store.Thought{Thought: "Caching choice between Redis and memory", Type: "decision_frame", NextThoughtNeeded: true}})
		list, total, err := th.List(ctx, "a", 10, 0, nil)
		if err != nil || total != 2 || len(list) != 2 || list[0].ID != other.ID {
			t.Fatalf("list: %+v total %d %v", list, total, err)
		}
		list, total, _ = th.List(ctx, "a", 10, 0, []string{"resolved"})
		if total != 1 || list[0].ID != ses.ID {
			t.Fatalf("list by tag: %+v", list)
		}
		list, total, _ = th.List(ctx, "a", 1, 1, nil)
		if total != 2 || len(list) != 1 || list[0].ID != ses.ID {
			t.Fatalf("list page 2: %+v", list)
		}
		if list, total, _ := th.List(ctx, "b", 10, 0, nil); total != 0 || len(list) != 0 {
			t.Fatalf("namespace b lists %d sessions", total)
		}

		hits := must[[]store.Hit](t)(th.Search(ctx, "a", "retries multiplier", 10))
		if len(hits) == 0 {
			t.Fatal("search found nothing")
		}
		for _, h := range hits {
			if h.SessionID != ses.ID {
				t.Fatalf("hit in the wrong session: %+v", h)
			}
		}
		if hits := must[[]store.Hit](t)(th.Search(ctx, "a", `redis" OR (`, 10)); len(hits) != 1 || hits[0].SessionID != other.ID {
			t.Fatalf("search with query syntax characters: %+v", hits)
		}
		if hits := must[[]store.Hit](t)(th.Search(ctx, "b", "retry", 10)); len(hits) != 0 {
			t.Fatalf("namespace b finds a's thoughts: %+v", hits)
		}
		n, m, err := th.Stats(ctx, "a")
		if err != nil || n != 2 || m != 5 {
			t.Fatalf("stats %d %d %v", n, m, err)
		}
	})
}

func TestKnowledge(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *store.Store, c *clock) {
		ctx := context.Background()
		k := s.Knowledge()
		e, existing, err := k.CreateEntity(ctx, "a", store.Entity{Name: "rate-limiting-strategy", Type: "Decision", Label: "Token bucket"})
		if err != nil || existing || e.ID == "" || string(e.Properties) != "{}" || e.Visibility != "public" {
			t.Fatalf("create: %+v %v %v", e, existing, err)
		}
		again, existing, err := k.CreateEntity(ctx, "a", store.Entity{Name: "rate-limiting-strategy", Type: "Decision", Label: "other"})
		if err != nil || !existing || again.ID != e.ID || again.Label != "Token bucket" {
			t.Fatalf("create again: %+v %v %v", again, existing, err)
		}
		c.advance(time.Second)
		if _, err := k.AddObservation(ctx, "a", e.ID, "Token bucket chosen for burst tolerance.", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := k.AddObservation(ctx, "b", e.ID, "x", ""); !errors.As(err, new(*store.NotFoundError)) {
			t.Fatalf("observation from another namespace: %v", err)
		}
		got, obs, err := k.Entity(ctx, "a", e.ID)
		if err != nil || got.Name != e.Name || len(obs) != 1 || !got.UpdatedAt.After(got.CreatedAt) {
			t.Fatalf("get: %+v %+v %v", got, obs, err)
		}
		concept := must[store.Entity](t)(func() (store.Entity, error) {
			e, _, err := k.CreateEntity(ctx, "a", store.Entity{Name: "Burst_tolerance", Type: "Concept", Label: "Burst", Properties: json.RawMessage(`{"x":1}`)})
			return e, err
		}())
		insight := must[store.Entity](t)(func() (store.Entity, error) {
			e, _, err := k.CreateEntity(ctx, "a", store.Entity{Name: "queues", Type: "Insight", Label: "Queues"})
			return e, err
		}())
		if _, _, err := k.CreateRelation(ctx, "a", e.ID, concept.ID, "DEPENDS_ON"); err != nil {
			t.Fatal(err)
		}
		if _, existing, err := k.CreateRelation(ctx, "a", e.ID, concept.ID, "DEPENDS_ON"); err != nil || !existing {
			t.Fatalf("relation twice: %v %v", existing, err)
		}
		if _, _, err := k.CreateRelation(ctx, "a", insight.ID, concept.ID, "BUILDS_ON"); err != nil {
			t.Fatal(err)
		}
		list, total, err := k.ListEntities(ctx, "a", store.EntityFilter{Types: []string{"Concept", "Insight"}})
		if err != nil || total != 2 || len(list) != 2 {
			t.Fatalf("list by type: %+v %d %v", list, total, err)
		}
		list, total, _ = k.ListEntities(ctx, "a", store.EntityFilter{NamePattern: "burst_"})
		if total != 1 || list[0].ID != concept.ID {
			t.Fatalf("list by name: %+v", list)
		}
		list, total, _ = k.ListEntities(ctx, "a", store.EntityFilter{NamePattern: "rate*strategy"})
		if total != 1 || list[0].ID != e.ID {
			t.Fatalf("list by pattern: %+v", list)
		}
		nodes, rels, err := k.QueryGraph(ctx, "a", e.ID, 1, nil)
		if err != nil || len(nodes) != 2 || len(rels) != 1 {
			t.Fatalf("graph depth 1: %+v %+v %v", nodes, rels, err)
		}
		nodes, rels, _ = k.QueryGraph(ctx, "a", e.ID, 2, nil)
		if len(nodes) != 3 || len(rels) != 2 || nodes[2].Depth != 2 {
			t.Fatalf("graph depth 2: %+v %+v", nodes, rels)
		}
		nodes, _, _ = k.QueryGraph(ctx, "a", e.ID, 3, []string{"BUILDS_ON"})
		if len(nodes) != 1 {
			t.Fatalf("graph by type: %+v", nodes)
		}
		st, err := k.Stats(ctx, "a")
		if err != nil || st.Entities != 3 || st.Relations != 2 || st.Observations != 1 || st.EntityTypes["Decision"] != 1 || st.RelationTypes["BUILDS_ON"] != 1 {
			t.Fatalf("stats %+v %v", st, err)
		}
		if st, _ := k.Stats(ctx, "b"); st.Entities != 0 {
			t.Fatalf("namespace b stats %+v", st)
		}
	})
}

// TestConcurrentWrites: 200 concurrent sets and 200 concurrent appends to
// one session; every one is acknowledged and stored, numbered without gaps.
func TestConcurrentWrites(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *store.Store, _ *clock) {
		ctx := context.Background()
		ses := must[store.Session](t)(s.Thoughts().CreateSession(ctx, "a", "c", nil))
		var wg sync.WaitGroup
		errs := make(chan error, 400)
		for i := range 200 {
			wg.Go(func() {
				if _, err := s.KV().Set(ctx, "a", fmt.Sprintf("k%03d", i), json.RawMessage(strconv.Itoa(i)), 0, store.KVLimits{MaxNamespaceBytes: 1 << 20}); err != nil {
					errs <- err
				}
			})
			wg.Go(func() {
				if _, _, err := s.Thoughts().AppendThought(ctx, "a", ses.ID, store.Append{Thought: store.Thought{Thought: fmt.Sprint("t", i), Type: "reasoning", NextThoughtNeeded: true}}); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		es, _, err := s.KV().List(ctx, "a", "k", "", 1000, false)
		if err != nil || len(es) != 200 {
			t.Fatalf("%d keys, %v", len(es), err)
		}
		_, ths, err := s.Thoughts().Get(ctx, "a", ses.ID)
		if err != nil || len(ths) != 200 {
			t.Fatalf("%d thoughts, %v", len(ths), err)
		}
		for i, th := range ths {
			if th.Number != i+1 {
				t.Fatalf("thought %d numbered %d", i+1, th.Number)
			}
		}
	})
}

// helperProcess is a second process writing to the same SQLite file: the
// multi-process test runs several of these at once.
func helperProcess() int {
	dir, id := os.Getenv("CODEMODE_STORE_HELPER"), os.Getenv("CODEMODE_STORE_HELPER_ID")
	s := store.New(&store.Options{Dir: dir})
	defer s.Close()
	ctx := context.Background()
	for i := range 50 {
		if _, err := s.KV().Set(ctx, "shared", fmt.Sprintf("%s-%02d", id, i), json.RawMessage(strconv.Itoa(i)), 0, store.KVLimits{}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return 0
}

func TestSQLiteSeveralProcesses(t *testing.T) {
	dir := t.TempDir()
	var cmds []*exec.Cmd
	for i := range 4 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "CODEMODE_STORE_HELPER="+dir, "CODEMODE_STORE_HELPER_ID=p"+strconv.Itoa(i))
		var out strings.Builder
		cmd.Stderr = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		t.Cleanup(func() {
			if out.Len() > 0 {
				t.Log(out.String())
			}
		})
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("helper process failed: %v", err)
		}
	}
	s := store.New(&store.Options{Dir: dir})
	defer s.Close()
	es, _, err := s.KV().List(context.Background(), "shared", "", "", 1000, false)
	if err != nil || len(es) != 200 {
		t.Fatalf("%d keys from 4 processes, %v", len(es), err)
	}
}

func TestLocate(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	if o := store.Locate("", env(map[string]string{"CODEMODE_STORE": "postgres://x/y", "CODEMODE_DATA_DIR": "/d"})); o.URL != "postgres://x/y" {
		t.Errorf("URL not preferred: %+v", o)
	}
	if o := store.Locate("/flag", env(map[string]string{"CODEMODE_DATA_DIR": "/d"})); o.Dir != "/flag" {
		t.Errorf("flag not preferred: %+v", o)
	}
	if o := store.Locate("", env(map[string]string{"CODEMODE_DATA_DIR": "/d"})); o.Dir != "/d" {
		t.Errorf("env ignored: %+v", o)
	}
	t.Setenv("XDG_STATE_HOME", "/state")
	if o := store.Locate("", env(nil)); o.Dir != filepath.Join("/state", "codemode") {
		t.Errorf("XDG_STATE_HOME ignored: %+v", o)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if o := store.Locate("", env(nil)); o.Dir != "/home/u/.local/state/codemode" {
		t.Errorf("default: %+v", o)
	}
}
