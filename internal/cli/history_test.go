package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/replay"
	"github.com/codemode-mcp/codemode/internal/store"
)

// historyIDs lists the recorded runs' ids, newest first.
func historyIDs(t *testing.T, dir string, extra ...string) []string {
	t.Helper()
	code, stdout, stderr := invoke(t, "", append([]string{"history", "list", "--json", "--data-dir", dir}, extra...)...)
	if code != ExitOK {
		t.Fatalf("history list: %d %s", code, stderr)
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		if l == "" {
			continue
		}
		var r struct{ ID, Surface, Outcome string }
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// Every history subcommand: runs of codemode run are listed (filtered),
// shown by id or prefix, rerun, and exported as replay bundles; with
// payloads the bundle replays offline.
func TestHistoryCommands(t *testing.T) {
	dir := t.TempDir()
	cfgDir := t.TempDir()
	cfg := writeFile(t, cfgDir, "codemode.json", `{"codemode": {"history": {"payloads": true}}}`)
	if code, _, stderr := invoke(t, `console.log("one"); globalThis.__codemode_result__ = 6 * 7;`, "run", "--config", cfg, "--data-dir", dir, "-"); code != ExitOK {
		t.Fatalf("run: %d %s", code, stderr)
	}
	if code, _, _ := invoke(t, `throw new Error("nope")`, "run", "--config", cfg, "--data-dir", dir, "-"); code != ExitFailed {
		t.Fatalf("failing run: %d", code)
	}
	ids := historyIDs(t, dir)
	if len(ids) != 2 {
		t.Fatalf("%d runs recorded, want 2", len(ids))
	}
	failed, ok := ids[0], ids[1]
	if got := historyIDs(t, dir, "--outcome", "error"); len(got) != 1 || got[0] != failed {
		t.Errorf("--outcome error: %v", got)
	}
	if got := historyIDs(t, dir, "--surface", "run"); len(got) != 0 {
		t.Errorf("--surface run: %v", got)
	}
	if got := historyIDs(t, dir, "--surface", "cli"); len(got) != 2 {
		t.Errorf("--surface cli: %v", got)
	}
	// A misspelt surface is a usage error naming the surfaces, not an
	// empty list that reads as "nothing was recorded".
	if code, _, stderr := invoke(t, "", "history", "list", "--surface", "clI", "--data-dir", dir); code != ExitUsage || !strings.Contains(stderr, `"clI"`) || !strings.Contains(stderr, "classic, cli, step") {
		t.Errorf("--surface clI: %d %s", code, stderr)
	}
	if got := historyIDs(t, dir, "--limit", "1", "--before", failed); len(got) != 1 || got[0] != ok {
		t.Errorf("--before: %v", got)
	}
	code, stdout, _ := invoke(t, "", "history", "--data-dir", dir)
	if code != ExitOK || !strings.Contains(stdout, "UNCAUGHT_EXCEPTION") || !strings.Contains(stdout, "cli") || !strings.HasPrefix(stdout, "ID") {
		t.Errorf("history (table): %d\n%s", code, stdout)
	}

	// show, by a prefix of the id.
	code, stdout, stderr := invoke(t, "", "history", "show", ok[:13], "--data-dir", dir)
	if code != ExitOK || !strings.Contains(stdout, "run      "+ok) || !strings.Contains(stdout, `console.log("one")`) || !strings.Contains(stdout, "result   42") || !strings.Contains(stdout, "ms] one") {
		t.Errorf("history show: %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = invoke(t, "", "history", "show", failed, "--json", "--data-dir", dir)
	var shown struct {
		Outcome  string
		Code     string
		Response struct{ Diagnostics []map[string]any }
	}
	if json.Unmarshal([]byte(stdout), &shown); code != ExitOK || shown.Outcome != "UNCAUGHT_EXCEPTION" || !strings.Contains(shown.Code, "nope") || len(shown.Response.Diagnostics) != 1 {
		t.Errorf("history show --json: %d\n%s", code, stdout)
	}
	if code, _, stderr := invoke(t, "", "history", "show", "0000000000000", "--data-dir", dir); code != ExitFailed || !strings.Contains(stderr, "no run") {
		t.Errorf("an unknown run: %d %s", code, stderr)
	}

	// rerun: the same code again, recorded too.
	code, stdout, stderr = invoke(t, "", "history", "rerun", ok, "--config", cfg, "--data-dir", dir)
	if code != ExitOK || !strings.Contains(stdout, `"result": 42`) {
		t.Errorf("history rerun: %d\n%s%s", code, stdout, stderr)
	}
	if code, _, _ := invoke(t, "", "history", "rerun", failed, "--config", cfg, "--data-dir", dir); code != ExitFailed {
		t.Errorf("rerun of a failed run: exit %d, want %d", code, ExitFailed)
	}
	if n := len(historyIDs(t, dir)); n != 4 {
		t.Errorf("%d runs after two reruns, want 4", n)
	}

	// export: recorded with payloads, the bundle replays offline.
	out := filepath.Join(t.TempDir(), "b.json")
	if code, _, stderr := invoke(t, "", "history", "export", ok, "--out", out, "--data-dir", dir); code != ExitOK {
		t.Fatalf("history export: %d %s", code, stderr)
	}
	b, err := replay.ReadFile(out)
	if err != nil || !b.Live || b.Code == "" {
		t.Fatalf("the bundle: %+v %v", b, err)
	}
	if code, stdout, stderr := invoke(t, "", "replay", "run", out); code != ExitOK {
		t.Errorf("replay run of the exported bundle: %d\n%s%s", code, stdout, stderr)
	}
	// Without payloads: a bundle all the same, and a warning that says why
	// it cannot replay the calls.
	dir2 := t.TempDir()
	invoke(t, `globalThis.__codemode_result__ = 1`, "run", "--data-dir", dir2, "-")
	id2 := historyIDs(t, dir2)[0]
	code, stdout, stderr = invoke(t, "", "history", "export", id2, "--data-dir", dir2)
	if code != ExitOK || !strings.Contains(stdout, `"format":"codemode-replay-bundle/1"`) || !strings.Contains(stderr, "without payloads") {
		t.Errorf("export without payloads: %d\n%s%s", code, stdout, stderr)
	}
	if code, _, stderr := invoke(t, "", "history", "nope"); code != ExitUsage || !strings.Contains(stderr, "unknown command") {
		t.Errorf("history nope: %d %s", code, stderr)
	}
}

// rerun replays a run of an MCP surface through that surface's tool, on a
// gateway made in process from the configuration.
func TestHistoryRerunSurface(t *testing.T) {
	dir := t.TempDir()
	cfg := writeFile(t, t.TempDir(), "codemode.json", `{"codemode": {"surfaces": ["run", "search-execute"]}}`)
	st := store.New(&store.Options{Dir: dir})
	rec := store.RunRecord{ID: "01900000-0000-7000-8000-000000000001", Start: time.Now(), Surface: "search-execute", Tool: "execute",
		Code: `async () => 20 + 22`, Limits: json.RawMessage(`{}`), Outcome: "ok", Response: json.RawMessage(`{}`)}
	if err := st.History().Add(context.Background(), []store.RunRecord{rec}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	code, stdout, stderr := invoke(t, "", "history", "rerun", rec.ID, "--config", cfg, "--data-dir", dir)
	if code != ExitOK || !strings.Contains(stdout, `"result": 42`) {
		t.Errorf("rerun on execute: %d\n%s%s", code, stdout, stderr)
	}
	runs := historyIDs(t, dir, "--surface", "search-execute")
	if len(runs) != 2 {
		t.Errorf("the rerun was not recorded on its surface: %v", runs)
	}
}

// A rerun that ends while a server still starts says nothing about that
// server: its start was cut short by the rerun's end, not by a fault.
func TestHistoryRerunQuietAboutStartingServers(t *testing.T) {
	dir := t.TempDir()
	// sleep never answers initialize: the server is still starting when
	// the rerun, which does not use it, ends.
	cfg := writeFile(t, t.TempDir(), "codemode.json", `{"mcpServers": {"slow": {"command": "sleep", "args": ["30"]}}}`)
	st := store.New(&store.Options{Dir: dir})
	rec := store.RunRecord{ID: "01900000-0000-7000-8000-000000000002", Start: time.Now(), Surface: "run", Tool: "codemode_run",
		Code: `globalThis.__codemode_result__ = 42`, Limits: json.RawMessage(`{}`), Outcome: "ok", Response: json.RawMessage(`{}`)}
	if err := st.History().Add(context.Background(), []store.RunRecord{rec}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	code, stdout, stderr := invoke(t, "", "history", "rerun", rec.ID, "--config", cfg, "--data-dir", dir)
	if code != ExitOK || !strings.Contains(stdout, `"result": 42`) {
		t.Fatalf("rerun: %d\n%s%s", code, stdout, stderr)
	}
	if strings.Contains(stderr, "upstream unavailable") {
		t.Errorf("the rerun's end was reported as the server's fault:\n%s", stderr)
	}
}

// Saved scripts: save (versions kept), list, show, delete, and codemode run
// --script with --args.
func TestScriptsCommands(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, t.TempDir(), "greet.ts", `import args from "@codemode/args";
globalThis.__codemode_result__ = "hello " + args.name;`)
	code, stdout, stderr := invoke(t, "", "scripts", "save", "greet", src, "--description", "says hello", "--data-dir", dir)
	if code != ExitOK || stdout != "saved greet@1\n" {
		t.Fatalf("save: %d %q %s", code, stdout, stderr)
	}
	if _, stdout, _ := invoke(t, "", "scripts", "save", "greet", src, "--data-dir", dir); stdout != "unchanged: greet@1 has this code already\n" {
		t.Errorf("save again: %q", stdout)
	}
	if _, stdout, _ := invoke(t, `globalThis.__codemode_result__ = "hi " + args.name;`, "scripts", "save", "greet", "-", "--data-dir", dir); stdout != "saved greet@2\n" {
		t.Errorf("save v2: %q", stdout)
	}
	if code, _, stderr := invoke(t, "", "scripts", "save", "no good", src, "--data-dir", dir); code != ExitUsage || !strings.Contains(stderr, "not a valid script name") {
		t.Errorf("a bad name: %d %s", code, stderr)
	}
	code, stdout, _ = invoke(t, "", "scripts", "list", "--json", "--data-dir", dir)
	var listed struct {
		Name     string
		Version  int
		Versions int
	}
	if json.Unmarshal([]byte(stdout), &listed); code != ExitOK || listed.Name != "greet" || listed.Version != 2 || listed.Versions != 2 {
		t.Errorf("list: %d %s", code, stdout)
	}
	if _, stdout, stderr := invoke(t, "", "scripts", "show", "greet@1", "--data-dir", dir); !strings.Contains(stdout, `"hello " + args.name`) || !strings.Contains(stderr, "versions 2, 1") {
		t.Errorf("show greet@1: %s %s", stdout, stderr)
	}
	code, stdout, stderr = invoke(t, "", "run", "--script", "greet", "--args", `{"name": "Ada"}`, "--data-dir", dir)
	if code != ExitOK || decode(t, stdout).Result != "hi Ada" {
		t.Errorf("run --script greet: %d %s %s", code, stdout, stderr)
	}
	if _, stdout, _ = invoke(t, "", "run", "--script", "greet@1", "--args", `{"name": "Ada"}`, "--data-dir", dir); decode(t, stdout).Result != "hello Ada" {
		t.Errorf("run --script greet@1: %s", stdout)
	}
	if code, _, stderr := invoke(t, "", "run", "--script", "nope", "--data-dir", dir); code != ExitUsage || !strings.Contains(stderr, `there is no saved script "nope"`) || !strings.Contains(stderr, "greet") {
		t.Errorf("run --script nope: %d %s", code, stderr)
	}
	if code, _, stderr := invoke(t, "", "run", "--script", "greet", "--args", "[1]", "--data-dir", dir); code != ExitUsage || !strings.Contains(stderr, "JSON object") {
		t.Errorf("--args [1]: %d %s", code, stderr)
	}
	// The run of a saved script is recorded with its name and args.
	_, stdout, _ = invoke(t, "", "history", "list", "--json", "--limit", "1", "--data-dir", dir)
	if !strings.Contains(stdout, `"script":"greet@1"`) {
		t.Errorf("the script's run: %s", stdout)
	}
	if _, stdout, _ := invoke(t, "", "scripts", "delete", "greet@2", "--data-dir", dir); stdout != "deleted 1 version(s) of greet\n" {
		t.Errorf("delete greet@2: %q", stdout)
	}
	if code, _, _ := invoke(t, "", "scripts", "delete", "greet@2", "--data-dir", dir); code != ExitFailed {
		t.Errorf("deleting it again: %d", code)
	}
	if _, stdout, _ := invoke(t, "", "scripts", "delete", "greet", "--data-dir", dir); stdout != "deleted 1 version(s) of greet\n" {
		t.Errorf("delete greet: %q", stdout)
	}
	if _, _, stderr := invoke(t, "", "scripts", "list", "--data-dir", dir); !strings.Contains(stderr, "no saved scripts") {
		t.Errorf("list after delete: %s", stderr)
	}
	os.Remove(src)
}
