package state_test

import (
	"os"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/builtin"
	"github.com/codemode-mcp/codemode/internal/builtin/builtintest"
	"github.com/codemode-mcp/codemode/internal/config"
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

var me = builtin.Caller{Client: "me", Session: "s"}

func TestStoreTools(t *testing.T) {
	builtintest.Backends(t, func(t *testing.T, st *store.Store) {
		g := builtintest.New(t, st, nil)
		var out map[string]any
		g.Result(t, me, `import { get, set, delete_ as del, list } from "@codemode/servers/store";
const r = {};
r.missing = await get({ key: "a" });
r.set = await set({ key: "a", value: { deep: [1, "two", null, true] } });
await set({ key: "b", value: null });
await set({ key: "c:1", value: 1 }); await set({ key: "c:2", value: 2 }); await set({ key: "c:3", value: 3 });
r.got = await get({ key: "a" });
r.nullValue = await get({ key: "b" });
r.ttl = await set({ key: "t", value: 1, ttlSeconds: 3600 });
const p1 = await list({ prefix: "c:", limit: 2 });
const p2 = await list({ prefix: "c:", limit: 2, cursor: p1.cursor, values: true });
r.pages = [p1.items.map((i) => i.key), p1.cursor, p2.items.map((i) => [i.key, i.value]), p2.cursor ?? null];
r.del = await del({ key: "a" });
r.delAgain = await del({ key: "a" });
r.after = await get({ key: "a" });
globalThis.__codemode_result__ = r;`, &out)
		if out["missing"].(map[string]any)["found"] != false {
			t.Errorf("missing: %v", out["missing"])
		}
		if got := out["got"].(map[string]any); got["found"] != true || got["value"].(map[string]any)["deep"].([]any)[1] != "two" {
			t.Errorf("get: %v", got)
		}
		if nv := out["nullValue"].(map[string]any); nv["found"] != true || nv["value"] != nil {
			t.Errorf("null value: %v", nv)
		}
		if out["ttl"].(map[string]any)["expiresAt"] == nil {
			t.Errorf("ttl: %v", out["ttl"])
		}
		if pages := out["pages"].([]any); pages[1] != "c:2" || len(pages[2].([]any)) != 1 || pages[3] != nil {
			t.Errorf("pages: %v", pages)
		}
		if out["del"].(map[string]any)["deleted"] != true || out["delAgain"].(map[string]any)["deleted"] != false || out["after"].(map[string]any)["found"] != false {
			t.Errorf("delete: %v %v %v", out["del"], out["delAgain"], out["after"])
		}
	})
}

func TestStoreLimitsNamed(t *testing.T) {
	cfg := config.Default()
	cfg.Store = config.StoreLimits{MaxValueBytes: 20, MaxNamespaceBytes: 60}
	g := builtintest.New(t, builtintest.SQLite(t), cfg)
	for _, c := range []struct{ code, want string }{
		{`await set({ key: "k", value: "x".repeat(30) })`, "maxValueBytes"},
		{`for (let i = 0; i < 10; i++) await set({ key: "k" + i, value: "0123456789" })`, "maxNamespaceBytes"},
		{`await set({ key: "k".repeat(2000), value: 1 })`, "limit per key"},
		{`await set({ key: "", value: 1 })`, "Missing required parameter: key"},
		{`await list({ limit: 5000 })`, "at most 1000"},
	} {
		resp := g.Run(t.Context(), me, `import { set, list } from "@codemode/servers/store";`+c.code)
		if !resp.Failed() || !strings.Contains(resp.Diagnostics[len(resp.Diagnostics)-1].Message, c.want) {
			t.Errorf("%s: want an error naming %q, got %v", c.code, c.want, resp.Diagnostics)
		}
	}
}
