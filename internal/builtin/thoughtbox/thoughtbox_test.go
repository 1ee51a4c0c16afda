package thoughtbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/codemode-mcp/codemode/internal/builtin"
	"github.com/codemode-mcp/codemode/internal/builtin/builtintest"
	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/reexec"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

func TestMain(m *testing.M) {
	if reexec.Init() { // esbuild workers
		return
	}
	code := m.Run()
	testutil.StopPostgres()
	os.Exit(code)
}

var alice = builtin.Caller{Client: "alice", Session: "s1"}

// result wraps a script so that its last expression value is the result.
func script(body string) string {
	return "globalThis.__codemode_result__ = await (async () => {\n" + body + "\n})();"
}

func errorOf(t *testing.T, g *builtintest.Gateway, c builtin.Caller, body string) diag.Diagnostic {
	t.Helper()
	resp := g.Run(context.Background(), c, script(body))
	for _, d := range resp.Diagnostics {
		if d.Severity == diag.SeverityError {
			return d
		}
	}
	t.Fatalf("no error; result %s", resp.Result)
	return diag.Diagnostic{}
}

func TestThoughtTypes(t *testing.T) {
	builtintest.Backends(t, func(t *testing.T, st *store.Store) {
		g := builtintest.New(t, st, nil)
		var out []map[string]any
		g.Result(t, alice, script(`
const r = [];
r.push(await tb.thought({ thought: "Retry logic fails because the backoff multiplier resets on partial success.", thoughtType: "reasoning", nextThoughtNeeded: true, confidence: "medium", sessionTitle: "Retry bug", sessionTags: ["bug"] }));
r.push(await tb.thought({ thought: "Redis or memory?", thoughtType: "decision_frame", nextThoughtNeeded: true, options: [{ label: "Redis", selected: false }, { label: "Memory", selected: true, reason: "simple" }] }));
r.push(await tb.thought({ thought: "Ran the migration.", thoughtType: "action_report", nextThoughtNeeded: true, actionResult: { success: true, reversible: "partial", tool: "psql", target: "db", sideEffects: ["locks"] } }));
r.push(await tb.thought({ thought: "What I believe now.", thoughtType: "belief_snapshot", nextThoughtNeeded: true, beliefs: { entities: [{ name: "cache", state: "cold" }], risks: ["stampede"] } }));
r.push(await tb.thought({ thought: "The clock is not monotonic.", thoughtType: "assumption_update", nextThoughtNeeded: true, assumptionChange: { text: "clock is monotonic", oldStatus: "believed", newStatus: "refuted", downstream: [1] } }));
r.push(await tb.thought({ thought: "Context.", thoughtType: "context_snapshot", nextThoughtNeeded: true, contextData: { modelId: "m1", toolsAvailable: ["a", "b"] } }));
r.push(await tb.thought({ thought: "Fix merged.", thoughtType: "progress", nextThoughtNeeded: true, progressData: { task: "fix retry", status: "done" } }));
r.push(await tb.thought({ thought: "Actually the multiplier resets on any success.", thoughtType: "reasoning", nextThoughtNeeded: true, isRevision: true, revisesThought: 1 }));
r.push(await tb.thought({ thought: "Alternative: jitter only.", thoughtType: "reasoning", nextThoughtNeeded: false, branchId: "jitter", branchFromThought: 2, confidence: "low" }));
return r;`), &out)
		if len(out) != 9 {
			t.Fatalf("%d thoughts", len(out))
		}
		sid := out[0]["sessionId"]
		for i, th := range out {
			if th["thoughtNumber"] != float64(i+1) || th["sessionId"] != sid {
				t.Errorf("thought %d: number %v session %v", i+1, th["thoughtNumber"], th["sessionId"])
			}
		}
		if out[1]["options"] == nil || out[2]["actionResult"] == nil || out[3]["beliefs"] == nil || out[4]["assumptionChange"] == nil ||
			out[5]["contextData"] == nil || out[6]["progressData"] == nil {
			t.Errorf("payloads not returned: %v", out)
		}
		if out[7]["revisesThought"] != float64(1) || out[7]["isRevision"] != true || out[8]["branchId"] != "jitter" {
			t.Errorf("revision/branch fields: %v %v", out[7], out[8])
		}
		ses := out[0]["session"].(map[string]any)
		if ses["title"] != "Retry bug" || fmt.Sprint(ses["tags"]) != "[bug]" {
			t.Errorf("session %v", ses)
		}
		if out[8]["session"].(map[string]any)["status"] != "completed" {
			t.Errorf("final thought did not complete the session: %v", out[8]["session"])
		}
		// The session ended: the next thought starts another.
		var next map[string]any
		g.Result(t, alice, script(`return tb.thought({ thought: "New problem.", thoughtType: "reasoning", nextThoughtNeeded: true })`), &next)
		if next["sessionId"] == sid || next["thoughtNumber"] != float64(1) {
			t.Errorf("after the end: %v", next)
		}
	})
}

func TestThoughtErrors(t *testing.T) {
	g := builtintest.New(t, builtintest.SQLite(t), nil)
	for _, c := range []struct{ body, want string }{
		{`return tb.thought({ thought: "x", thoughtType: "decision_frame", nextThoughtNeeded: true })`, "Missing required parameter: options"},
		{`return tb.thought({ thought: "x", thoughtType: "action_report", nextThoughtNeeded: true })`, "Missing required parameter: actionResult"},
		{`return tb.thought({ thought: "x", thoughtType: "belief_snapshot", nextThoughtNeeded: true })`, "Missing required parameter: beliefs"},
		{`return tb.thought({ thought: "x", thoughtType: "assumption_update", nextThoughtNeeded: true })`, "Missing required parameter: assumptionChange"},
		{`return tb.thought({ thought: "x", thoughtType: "context_snapshot", nextThoughtNeeded: true })`, "Missing required parameter: contextData"},
		{`return tb.thought({ thought: "x", thoughtType: "progress", nextThoughtNeeded: true })`, "Missing required parameter: progressData"},
		{`return tb.thought({ thought: "x", thoughtType: "reasoning" })`, "Missing required parameter: nextThoughtNeeded"},
		{`return tb.thought("just text")`, "Missing required parameter: thought"},
		{`return tb.thought({ thought: "x", thoughtType: "musing", nextThoughtNeeded: true })`, "thoughtType"},
		{`return tb.thought({ thought: "x", thoughtType: "reasoning", nextThoughtNeeded: true, isRevision: true, revisesThought: 99 })`, "no thought 99"},
	} {
		d := errorOf(t, g, builtin.Caller{Client: "e", Session: c.body}, c.body)
		if !strings.Contains(d.Message, c.want) {
			t.Errorf("%s\n  got %s: %s\n  want %q", c.body, d.Code, d.Message, c.want)
		}
	}
}

func TestCurrentSessionPerMCPSession(t *testing.T) {
	g := builtintest.New(t, builtintest.SQLite(t), nil)
	one := func(c builtin.Caller) string {
		var th map[string]any
		g.Result(t, c, script(`return tb.thought({ thought: "step", thoughtType: "reasoning", nextThoughtNeeded: true })`), &th)
		return th["sessionId"].(string)
	}
	a1, a2 := one(builtin.Caller{Client: "c", Session: "A"}), one(builtin.Caller{Client: "c", Session: "A"})
	b1 := one(builtin.Caller{Client: "c", Session: "B"})
	if a1 != a2 || a1 == b1 {
		t.Fatalf("sessions: A %s %s, B %s", a1, a2, b1)
	}
	// Resume A's session from B: B's thoughts now go there.
	var res map[string]any
	g.Result(t, builtin.Caller{Client: "c", Session: "B"}, script(`return tb.session.resume(`+jsonQ(a1)+`)`), &res)
	if res["nextThoughtNumber"] != float64(3) {
		t.Fatalf("resume: %v", res)
	}
	if got := one(builtin.Caller{Client: "c", Session: "B"}); got != a1 {
		t.Fatalf("after resume B appends to %s, want %s", got, a1)
	}
}

func jsonQ(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestSessionMethods(t *testing.T) {
	builtintest.Backends(t, func(t *testing.T, st *store.Store) {
		g := builtintest.New(t, st, nil)
		var out map[string]any
		g.Result(t, alice, script(`
const a = await tb.thought({ thought: "Retry logic fails because the backoff multiplier resets.", thoughtType: "reasoning", nextThoughtNeeded: true, sessionTitle: "Retries", sessionTags: ["bug", "net"] });
await tb.thought({ thought: "Pick a cache.", thoughtType: "decision_frame", nextThoughtNeeded: true, options: [{ label: "Redis", selected: true }] });
await tb.thought({ thought: "No: it resets on every success.", thoughtType: "reasoning", nextThoughtNeeded: false, isRevision: true, revisesThought: 1 });
const b = await tb.thought({ thought: "Unrelated: the UI flickers.", thoughtType: "reasoning", nextThoughtNeeded: false, sessionTags: ["ui"] });
const id = a.sessionId;
return {
  id,
  list: await tb.session.list({ limit: 5 }),
  listAll: await tb.session.list(),
  listTag: await tb.session.list({ tags: ["net"] }),
  listPage: await tb.session.list({ limit: 1, offset: 1 }),
  get: await tb.session.get(id),
  getNamed: await tb.session.get({ sessionId: id }),
  search: await tb.session.search("retries multiplier"),
  searchLimit: await tb.session.search("flickers", 1),
  searchNamed: await tb.session.search({ query: "flickers" }),
  md: await tb.session.export(id, "markdown"),
  mdDefault: await tb.session.export(id),
  json: await tb.session.export({ sessionId: id, format: "json" }),
  cipher: await tb.session.export(id, "cipher"),
  analyze: await tb.session.analyze(id),
  learn: await tb.session.extractLearnings(id, { keyMoments: [{ thoughtNumber: 2, type: "decision", significance: 8, summary: "chose Redis" }, { thoughtNumber: 3, type: "revision" }], targetTypes: ["pattern", "anti-pattern"] }),
  learnAuto: await tb.session.extractLearnings(id),
  resume: await tb.session.resume(id),
};`), &out)
		id := out["id"].(string)
		list := out["list"].(map[string]any)
		if list["total"] != float64(2) || len(list["sessions"].([]any)) != 2 || out["listAll"].(map[string]any)["total"] != float64(2) {
			t.Errorf("list: %v", list)
		}
		if lt := out["listTag"].(map[string]any); lt["total"] != float64(1) || lt["sessions"].([]any)[0].(map[string]any)["id"] != id {
			t.Errorf("list by tag: %v", lt)
		}
		// The second page holds the session the first page of one does
		// not (both were updated within the same millisecond, maybe).
		first := out["list"].(map[string]any)["sessions"].([]any)[0].(map[string]any)["id"]
		if lp := out["listPage"].(map[string]any); len(lp["sessions"].([]any)) != 1 || lp["sessions"].([]any)[0].(map[string]any)["id"] == first {
			t.Errorf("list page: %v", lp)
		}
		get := out["get"].(map[string]any)
		if get["id"] != id || len(get["thoughts"].([]any)) != 3 || get["status"] != "completed" {
			t.Errorf("get: %v", get)
		}
		if fmt.Sprint(out["getNamed"]) != fmt.Sprint(get) {
			t.Errorf("get named differs")
		}
		sr := out["search"].(map[string]any)["results"].([]any)
		if len(sr) != 1 || sr[0].(map[string]any)["sessionId"] != id {
			t.Errorf("search: %v", sr)
		}
		if len(out["searchLimit"].(map[string]any)["results"].([]any)) != 1 || len(out["searchNamed"].(map[string]any)["results"].([]any)) != 1 {
			t.Errorf("search flickers: %v %v", out["searchLimit"], out["searchNamed"])
		}
		md := out["md"].(string)
		if !strings.HasPrefix(md, "# Retries") || !strings.Contains(md, "## 2. decision_frame") || !strings.Contains(md, "- [x] Redis") || md != out["mdDefault"] {
			t.Errorf("markdown:\n%s", md)
		}
		js := out["json"].(map[string]any)
		if js["format"] != "json" || len(js["thoughts"].([]any)) != 3 {
			t.Errorf("json export: %v", js)
		}
		ci := out["cipher"].(string)
		if !strings.HasPrefix(ci, "TB1 "+id+` "Retries" #bug #net status=completed n=3`) || !strings.Contains(ci, "\n2D Pick a cache. {+Redis}\n") || !strings.Contains(ci, "\n3R^1$ No: it resets") {
			t.Errorf("cipher:\n%s", ci)
		}
		m := out["analyze"].(map[string]any)["metrics"].(map[string]any)
		if m["revisionRate"] != 0.333 || m["linearity"] != 0.667 || m["convergence"] != float64(1) || m["depth"] != float64(0) || m["density"].(float64) <= 0 {
			t.Errorf("analyze: %v", m)
		}
		ls := out["learn"].(map[string]any)
		if l := ls["learnings"].([]any); len(l) != 2 || l[0].(map[string]any)["type"] != "pattern" || l[1].(map[string]any)["type"] != "anti-pattern" || l[1].(map[string]any)["before"] == nil {
			t.Errorf("learnings: %v", ls)
		}
		if ls["signal"] != nil {
			t.Errorf("signal not asked for: %v", ls["signal"])
		}
		la := out["learnAuto"].(map[string]any)
		if len(la["learnings"].([]any)) != 2 || la["signal"] == nil {
			t.Errorf("automatic learnings: %v", la)
		}
		if out["resume"].(map[string]any)["nextThoughtNumber"] != float64(4) {
			t.Errorf("resume: %v", out["resume"])
		}
		for _, body := range []string{`return tb.session.get()`, `return tb.session.export({ format: "json" })`} {
			if d := errorOf(t, g, alice, body); !strings.Contains(d.Message, "Missing required parameter: sessionId") {
				t.Errorf("%s: %s", body, d.Message)
			}
		}
		if d := errorOf(t, g, alice, `return tb.session.get("nope")`); !strings.Contains(d.Message, `no session with id "nope"`) {
			t.Errorf("missing session: %s", d.Message)
		}
		if d := errorOf(t, g, alice, `return tb.session.export(`+jsonQ(id)+`, "pdf")`); !strings.Contains(d.Message, "format") {
			t.Errorf("bad format: %s", d.Message)
		}
	})
}

func TestKnowledgeMethods(t *testing.T) {
	builtintest.Backends(t, func(t *testing.T, st *store.Store) {
		g := builtintest.New(t, st, nil)
		var out map[string]any
		g.Result(t, alice, script(`
const types = ["Insight", "Concept", "Workflow", "Decision", "Agent"];
const es = [];
for (const type of types) es.push(await tb.knowledge.createEntity({ name: "e-" + type, type, label: type + " one", properties: { n: 1 }, visibility: "public" }));
const rels = ["RELATES_TO", "BUILDS_ON", "CONTRADICTS", "EXTRACTED_FROM", "APPLIED_IN", "LEARNED_BY", "DEPENDS_ON", "SUPERSEDES", "MERGED_FROM"];
const rs = [];
for (let i = 0; i < rels.length; i++) rs.push(await tb.knowledge.createRelation({ from_id: es[i % 5].id, to_id: es[(i + 1) % 5].id, relation_type: rels[i] }));
const obs = await tb.knowledge.addObservation({ entity_id: es[0].id, content: "Seen twice." });
return {
  es, rs, obs,
  again: await tb.knowledge.createEntity({ name: "e-Insight", type: "Insight", label: "x" }),
  get: await tb.knowledge.getEntity(es[0].id),
  getNamed: await tb.knowledge.getEntity({ entityId: es[0].id }),
  getSnake: await tb.knowledge.getEntity({ entity_id: es[0].id }),
  list: await tb.knowledge.listEntities({ types: ["Decision", "Agent"] }),
  listName: await tb.knowledge.listEntities({ name_pattern: "e-w" }),
  listPage: await tb.knowledge.listEntities({ limit: 2, offset: 4 }),
  graph1: await tb.knowledge.queryGraph({ start_entity_id: es[0].id, max_depth: 1 }),
  graphTyped: await tb.knowledge.queryGraph({ start_entity_id: es[0].id, max_depth: 5, relation_types: ["RELATES_TO"] }),
  stats: await tb.knowledge.stats(),
};`), &out)
		es := out["es"].([]any)
		if len(es) != 5 || es[0].(map[string]any)["id"] == "" || es[0].(map[string]any)["existing"] != false {
			t.Fatalf("entities: %v", es)
		}
		if len(out["rs"].([]any)) != 9 {
			t.Errorf("relations: %v", out["rs"])
		}
		if a := out["again"].(map[string]any); a["existing"] != true || a["id"] != es[0].(map[string]any)["id"] || a["label"] != "Insight one" {
			t.Errorf("create again: %v", a)
		}
		get := out["get"].(map[string]any)
		if len(get["observations"].([]any)) != 1 || fmt.Sprint(out["getNamed"]) != fmt.Sprint(get) || fmt.Sprint(out["getSnake"]) != fmt.Sprint(get) {
			t.Errorf("get: %v / %v", get, out["getNamed"])
		}
		if l := out["list"].(map[string]any); l["total"] != float64(2) {
			t.Errorf("list by type: %v", l)
		}
		if l := out["listName"].(map[string]any); l["total"] != float64(1) {
			t.Errorf("list by name: %v", l)
		}
		if l := out["listPage"].(map[string]any); len(l["entities"].([]any)) != 1 || l["total"] != float64(5) {
			t.Errorf("list page: %v", l)
		}
		// Insight: RELATES_TO→Concept, MERGED_FROM←Decision?? (i=8: es[3]→es[4]); i=4: es[4]→es[0] APPLIED_IN; i=5: es[0]→es[1] LEARNED_BY.
		if g1 := out["graph1"].(map[string]any); g1["entity_count"] != float64(3) || g1["relation_count"] != float64(3) {
			t.Errorf("graph depth 1: %v", g1)
		}
		if gt := out["graphTyped"].(map[string]any); gt["entity_count"] != float64(2) || gt["relation_count"] != float64(1) {
			t.Errorf("graph by type: %v", gt)
		}
		stats := out["stats"].(map[string]any)
		if stats["entities"] != float64(5) || stats["relations"] != float64(9) || stats["observations"] != float64(1) {
			t.Errorf("stats: %v", stats)
		}
		// Positional forms fail as Thoughtbox's do.
		for _, body := range []string{
			`return tb.knowledge.addObservation("some-id", "content")`,
			`return tb.knowledge.queryGraph("some-id")`,
			`return tb.knowledge.queryGraph("some-id", 2)`,
			`return tb.knowledge.addObservation({ entity_id: "x" })`,
		} {
			if d := errorOf(t, g, alice, body); !strings.Contains(d.Message, "Missing required parameter") {
				t.Errorf("%s: %s", body, d.Message)
			}
		}
		if d := errorOf(t, g, alice, `return tb.knowledge.createEntity({ name: "n", type: "Person", label: "l" })`); !strings.Contains(d.Message, `"Insight", "Concept", "Workflow", "Decision", "Agent"`) {
			t.Errorf("bad entity type: %s", d.Message)
		}
		if d := errorOf(t, g, alice, `return tb.knowledge.addObservation({ entity_id: "nope", content: "c" })`); !strings.Contains(d.Message, `no entity with id "nope"`) {
			t.Errorf("observation on a missing entity: %s", d.Message)
		}
	})
}

// TestNamespaces: two clients never see each other's sessions, entities or
// keys.
func TestNamespaces(t *testing.T) {
	g := builtintest.New(t, builtintest.SQLite(t), nil)
	bob := builtin.Caller{Client: "bob", Session: "s1"}
	var a map[string]any
	g.Result(t, alice, script(`
const th = await tb.thought({ thought: "alice's secret plan", thoughtType: "reasoning", nextThoughtNeeded: true });
const e = await tb.knowledge.createEntity({ name: "plan", type: "Decision", label: "plan" });
const { set } = await import("@codemode/servers/store");
await set({ key: "k", value: "alice" });
return { sid: th.sessionId, eid: e.id };`), &a)
	var b map[string]any
	g.Result(t, bob, script(`
const { get } = await import("@codemode/servers/store");
let getSession;
try { await tb.session.get(`+jsonQ(a["sid"].(string))+`); } catch (e) { getSession = e.message; }
return { list: await tb.session.list(), search: await tb.session.search("secret plan"), ents: await tb.knowledge.listEntities(), stats: await tb.knowledge.stats(), key: await get({ key: "k" }), getSession };`), &b)
	if b["list"].(map[string]any)["total"] != float64(0) || len(b["search"].(map[string]any)["results"].([]any)) != 0 ||
		b["ents"].(map[string]any)["total"] != float64(0) || b["key"].(map[string]any)["found"] != false || !strings.Contains(fmt.Sprint(b["getSession"]), "no session") {
		t.Fatalf("bob sees alice's data: %v", b)
	}
}

// TestSeedExamples runs the seed's examples verbatim (as the arrow
// functions they are) against the built-in.
func TestSeedExamples(t *testing.T) {
	builtintest.Backends(t, func(t *testing.T, st *store.Store) {
		g := builtintest.New(t, st, nil)
		for _, ex := range builtintest.SeedExamples {
			resp := g.Run(context.Background(), alice, "globalThis.__codemode_result__ = await ("+ex.Code+")();")
			if ex.Fails {
				if !resp.Failed() || !strings.Contains(fmt.Sprint(resp.Diagnostics), ex.Want) {
					t.Errorf("%s: want an error with %q, got %s %v", ex.Name, ex.Want, resp.Result, resp.Diagnostics)
				}
				continue
			}
			if resp.Failed() || !strings.Contains(string(resp.Result), ex.Want) {
				t.Errorf("%s: want %q in the result, got %s %v", ex.Name, ex.Want, resp.Result, resp.Diagnostics)
			}
		}
	})
}

// TestConcurrentRuns: 200 runs at once, each setting a key and recording a
// thought in one shared MCP session; nothing is lost, no lock error
// reaches a script.
func TestConcurrentRuns(t *testing.T) {
	builtintest.Backends(t, func(t *testing.T, st *store.Store) {
		g := builtintest.New(t, st, nil)
		c := builtin.Caller{Client: "conc", Session: "one"}
		var wg sync.WaitGroup
		fails := make(chan string, 200)
		// One script for all (compiled once; 200 different ones would
		// queue for the compiler, which is not what is tested here), each
		// run picking its own key.
		const code = `import { set } from "@codemode/servers/store";
const k = "k" + Math.random().toString(36).slice(2) + Math.random().toString(36).slice(2);
await Promise.all([set({ key: k, value: k }), tb.thought({ thought: "step " + k, thoughtType: "reasoning", nextThoughtNeeded: true })]);`
		// A first run compiles it (and is counted below).
		if resp := g.Run(context.Background(), c, code); resp.Failed() {
			t.Fatalf("%v", resp.Diagnostics)
		}
		for range 200 {
			wg.Go(func() {
				resp := g.Run(context.Background(), c, code)
				if resp.Failed() {
					b, _ := json.Marshal(resp.Diagnostics)
					fails <- string(b)
				}
			})
		}
		wg.Wait()
		close(fails)
		for f := range fails {
			t.Fatal(f)
		}
		var out map[string]any
		g.Result(t, c, script(`
const { list } = await import("@codemode/servers/store");
let n = 0, cursor;
do { const p = await list({ limit: 1000, cursor }); n += p.items.length; cursor = p.cursor; } while (cursor);
const s = await tb.session.list();
const full = await tb.session.get(s.sessions[0].id);
return { keys: n, sessions: s.total, thoughts: full.thoughts.map((t) => t.thoughtNumber) };`), &out)
		if out["keys"] != float64(201) || out["sessions"] != float64(1) {
			t.Fatalf("after 200 runs: %v keys, %v sessions", out["keys"], out["sessions"])
		}
		nums := out["thoughts"].([]any)
		if len(nums) != 201 {
			t.Fatalf("%d thoughts", len(nums))
		}
		for i, n := range nums {
			if n != float64(i+1) {
				t.Fatalf("thought %d numbered %v", i+1, n)
			}
		}
	})
}
