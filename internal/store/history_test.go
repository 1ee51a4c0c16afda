package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/store"
)

func runRecord(id string, start time.Time, surface, outcome string, calls ...store.CallRecord) store.RunRecord {
	return store.RunRecord{ID: id, Start: start, Duration: 1500 * time.Microsecond, Surface: surface, Tool: "codemode_run", Session: "s", Client: "c/1",
		Code: "return 1", CodeSHA256: "ab", Limits: json.RawMessage(`{"timeoutMs":1}`), Outcome: outcome, Response: json.RawMessage(`{"result":1}`),
		ToolCalls: len(calls), Calls: calls}
}

// Runs are recorded with their calls, listed newest first with filters and
// pages, read back whole (by id or a prefix of it), and pruned by age and
// by size.
func TestHistory(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *store.Store, c *clock) {
		ctx := context.Background()
		h := s.History()
		t0 := c.now()
		var runs []store.RunRecord
		for i := range 10 {
			surface, outcome := "run", "ok"
			if i%2 == 1 {
				surface = "files"
			}
			if i%3 == 0 {
				outcome = "UNCAUGHT_EXCEPTION"
			}
			var calls []store.CallRecord
			if i%5 == 0 {
				calls = append(calls, store.CallRecord{Server: "calc", Tool: "add", Offset: 250 * time.Microsecond, Duration: time.Millisecond, Outcome: "ok",
					Input: json.RawMessage(`{"a":1}`), Output: json.RawMessage(`3`)},
					store.CallRecord{Server: "gh", Tool: "get", Offset: 300 * time.Microsecond, Duration: 2 * time.Millisecond, Outcome: "tool_error", ErrorClass: "ToolCallError", Error: "ToolCallError: get (gh/get) failed"})
			}
			runs = append(runs, runRecord(fmt.Sprintf("0000000%d-run", i), t0.Add(time.Duration(i)*time.Second), surface, outcome, calls...))
		}
		// Two batches, one of them repeating a run (recorded once).
		if err := h.Add(ctx, runs[:6]); err != nil {
			t.Fatal(err)
		}
		if err := h.Add(ctx, runs[5:]); err != nil {
			t.Fatal(err)
		}
		n, bytes, err := h.Usage(ctx)
		if err != nil || n != 10 || bytes <= 0 {
			t.Fatalf("usage %d runs %d bytes, %v", n, bytes, err)
		}

		ids := func(rs []store.RunRecord) string {
			out := ""
			for _, r := range rs {
				out += r.ID[7:8]
			}
			return out
		}
		for _, tc := range []struct {
			f    store.RunFilter
			want string
			more bool
		}{
			{store.RunFilter{}, "9876543210", false},
			{store.RunFilter{Limit: 3}, "987", true},
			{store.RunFilter{Limit: 3, Before: runs[7].ID}, "654", true},
			{store.RunFilter{Limit: 3, Before: runs[1].ID}, "0", false},
			{store.RunFilter{Surface: "files"}, "97531", false},
			{store.RunFilter{Outcome: "error"}, "9630", false},
			{store.RunFilter{Outcome: "ok", Surface: "run"}, "842", false},
			{store.RunFilter{Server: "gh"}, "50", false},
			{store.RunFilter{Since: t0.Add(2 * time.Second), Until: t0.Add(5 * time.Second)}, "432", false},
		} {
			got, more, err := h.List(ctx, tc.f)
			if err != nil || ids(got) != tc.want || more != tc.more {
				t.Errorf("List(%+v) = %s more=%v, %v; want %s more=%v", tc.f, ids(got), more, err, tc.want, tc.more)
			}
		}
		if _, _, err := h.List(ctx, store.RunFilter{Before: "nope"}); !isNotFound(err) {
			t.Errorf("List before an unknown run: %v", err)
		}

		r, err := h.Get(ctx, runs[5].ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.Code != "return 1" || string(r.Response) != `{"result":1}` || r.Duration != 1500*time.Microsecond || !r.Start.Equal(runs[5].Start) ||
			r.Client != "c/1" || string(r.Limits) != `{"timeoutMs":1}` || len(r.Calls) != 2 {
			t.Fatalf("Get: %+v", r)
		}
		if c := r.Calls[0]; c.Server != "calc" || c.Offset != 250*time.Microsecond || c.Duration != time.Millisecond || string(c.Input) != `{"a":1}` || string(c.Output) != "3" {
			t.Errorf("call 0: %+v", c)
		}
		if c := r.Calls[1]; c.Outcome != "tool_error" || c.ErrorClass != "ToolCallError" || c.Input != nil || c.Output != nil {
			t.Errorf("call 1: %+v", c)
		}
		if r.Args != nil || r.Bundle != nil {
			t.Errorf("args %s bundle %s", r.Args, r.Bundle)
		}
		withBundle := runRecord("0000000b-bundle", t0.Add(-time.Hour), "cli", "ok")
		withBundle.Args, withBundle.Bundle = json.RawMessage(`{"owner":"me"}`), json.RawMessage(`{"format":"x"}`)
		if err := h.Add(ctx, []store.RunRecord{withBundle}); err != nil {
			t.Fatal(err)
		}
		if r, err := h.Get(ctx, withBundle.ID); err != nil || string(r.Args) != `{"owner":"me"}` || string(r.Bundle) != `{"format":"x"}` {
			t.Errorf("args and bundle: %+v %v", r, err)
		}
		if _, err := h.Get(ctx, "nope"); !isNotFound(err) {
			t.Errorf("Get(nope): %v", err)
		}
		// A prefix of 8 characters or more finds a run, if only one.
		if r, err := h.Get(ctx, "00000005"); err != nil || r.ID != runs[5].ID {
			t.Errorf("Get by prefix: %v %v", r.ID, err)
		}
		var amb *store.AmbiguousError
		if _, err := h.Get(ctx, "0000000"); !isNotFound(err) {
			t.Errorf("a prefix under 8 characters is an id: %v", err)
		}
		if err := h.Add(ctx, []store.RunRecord{runRecord("00000005-other", t0, "run", "ok")}); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Get(ctx, "00000005"); !errors.As(err, &amb) {
			t.Errorf("an ambiguous prefix: %v", err)
		}

		// By age: runs before t0+3s go (0, 1, 2 and the two extra ones).
		pr, err := h.Prune(ctx, t0.Add(3*time.Second), 0)
		if err != nil || pr.Deleted != 5 || pr.Runs != 7 || !pr.Oldest.Equal(t0.Add(3*time.Second)) {
			t.Fatalf("Prune by age: %+v, %v", pr, err)
		}
		got, _, _ := h.List(ctx, store.RunFilter{})
		if ids(got) != "9876543" {
			t.Errorf("after pruning by age: %s", ids(got))
		}
		// By size: keep what fits in the bytes of two runs without calls.
		rn, total, _ := h.Usage(ctx)
		per := total / rn
		pr, err = h.Prune(ctx, time.Time{}, 2*per+per/2)
		if err != nil {
			t.Fatal(err)
		}
		got, _, _ = h.List(ctx, store.RunFilter{})
		if ids(got) != "98" || pr.Deleted != 5 || pr.Runs != 2 || pr.Bytes > 2*per+per/2 {
			t.Errorf("after pruning by size: %s (%+v)", ids(got), pr)
		}
		n, bytes, _ = h.Usage(ctx)
		if n != 2 || bytes > 2*per+per/2 {
			t.Errorf("usage after pruning: %d runs, %d bytes", n, bytes)
		}
		// The calls went with their runs.
		if got, _, _ := h.List(ctx, store.RunFilter{Server: "calc"}); len(got) != 0 {
			t.Errorf("calls of pruned runs remain: %v", ids(got))
		}
	})
}

func isNotFound(err error) bool {
	var nf *store.NotFoundError
	return errors.As(err, &nf)
}

// Saving keeps every version; saving the same code again is not a new
// version; delete removes one version or all.
func TestScripts(t *testing.T) {
	forEachBackend(t, func(t *testing.T, s *store.Store, c *clock) {
		ctx := context.Background()
		sc := s.Scripts()
		v1, saved, err := sc.Save(ctx, "report", "return 1", "first")
		if err != nil || !saved || v1.Version != 1 {
			t.Fatalf("save: %+v %v %v", v1, saved, err)
		}
		c.advance(time.Second)
		if same, saved, err := sc.Save(ctx, "report", "return 1", ""); err != nil || saved || same.Version != 1 || same.Description != "first" {
			t.Errorf("saving the same code: %+v %v %v", same, saved, err)
		}
		v2, saved, err := sc.Save(ctx, "report", "return 2", "")
		if err != nil || !saved || v2.Version != 2 {
			t.Fatalf("save v2: %+v %v %v", v2, saved, err)
		}
		sc.Save(ctx, "another", "return 3", "")
		if got, err := sc.Get(ctx, "report", 0); err != nil || got.Version != 2 || got.Code != "return 2" {
			t.Errorf("latest: %+v %v", got, err)
		}
		if got, err := sc.Get(ctx, "report", 1); err != nil || got.Code != "return 1" || got.Description != "first" || !got.CreatedAt.Equal(v1.CreatedAt) {
			t.Errorf("v1: %+v %v", got, err)
		}
		if _, err := sc.Get(ctx, "report", 3); !isNotFound(err) || err.Error() != `no saved script with id "report@3"` {
			t.Errorf("v3: %v", err)
		}
		list, err := sc.List(ctx)
		if err != nil || len(list) != 2 || list[0].Name != "another" || list[1].Name != "report" || list[1].Version != 2 || list[1].Versions != 2 {
			t.Errorf("list: %+v %v", list, err)
		}
		vs, err := sc.Versions(ctx, "report")
		if err != nil || len(vs) != 2 || vs[0].Version != 2 || vs[1].Version != 1 {
			t.Errorf("versions: %+v %v", vs, err)
		}
		if n, err := sc.Delete(ctx, "report", 2); err != nil || n != 1 {
			t.Errorf("delete v2: %d %v", n, err)
		}
		// Deleting the latest version makes the one before it the latest.
		if got, _ := sc.Get(ctx, "report", 0); got.Version != 1 {
			t.Errorf("latest after deleting v2: %+v", got)
		}
		if n, err := sc.Delete(ctx, "report", 0); err != nil || n != 1 {
			t.Errorf("delete all: %d %v", n, err)
		}
		if _, err := sc.Get(ctx, "report", 0); !isNotFound(err) {
			t.Errorf("after delete: %v", err)
		}
	})
}
