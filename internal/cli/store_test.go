package cli

import (
	"encoding/json"
	"strings"
	"testing"
)

// A value set in one `codemode run` is read in the next, from the same
// --data-dir; another data dir does not have it.
func TestRunStatePersistsAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := invoke(t, `import { set } from "@codemode/servers/store"; await set({ key: "greeting", value: { hello: "world" } });`, "run", "--data-dir", dir, "-")
	if code != ExitOK {
		t.Fatalf("set: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := invoke(t, `import { get } from "@codemode/servers/store"; globalThis.__codemode_result__ = (await get({ key: "greeting" })).value;`, "run", "--data-dir", dir, "-")
	if code != ExitOK || decode(t, stdout).Result == nil || !strings.Contains(string(mustJSON(t, decode(t, stdout).Result)), `"hello":"world"`) {
		t.Fatalf("get: exit %d\n%s\n%s", code, stdout, stderr)
	}
	_, stdout, _ = invoke(t, `import { get } from "@codemode/servers/store"; globalThis.__codemode_result__ = (await get({ key: "greeting" })).found;`, "run", "--data-dir", t.TempDir(), "-")
	if r := string(mustJSON(t, decode(t, stdout).Result)); r != "false" {
		t.Fatalf("another data dir: %s", r)
	}
	// Each run is its own Thoughtbox session.
	thought := `import { thought } from "@codemode/servers/thoughtbox"; globalThis.__codemode_result__ = (await thought({ thought: "x", thoughtType: "reasoning", nextThoughtNeeded: true })).thoughtNumber;`
	for range 2 {
		_, stdout, _ = invoke(t, thought, "run", "--data-dir", dir, "-")
		if r := string(mustJSON(t, decode(t, stdout).Result)); r != "1" {
			t.Fatalf("a run's first thought numbered %s", r)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
