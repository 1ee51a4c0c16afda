package serve_test

// The official MCP conformance suite (@modelcontextprotocol/conformance)
// against `codemode serve --http`.

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/testutil"
)

// conformanceScenarios are the server scenarios that apply to the gateway.
// The others (`conformance list`) test a server's own features, which the
// gateway does not have:
//
//   - tools-call-* (simple-text, image, audio, embedded-resource,
//     mixed-content, with-logging, error, with-progress, sampling,
//     elicitation), elicitation-sep1034-defaults, elicitation-sep1330-enums,
//     json-schema-2020-12 and server-sse-polling call test_* tools (or
//     json_schema_2020_12_tool, test_reconnection) that only the suite's
//     reference server defines; the gateway's tools are its surfaces.
//   - resources-*, prompts-* and completion-complete need resources,
//     prompts and completions of the server's own; the gateway declares
//     only the tools capability (upstream resources and prompts are reached
//     from code).
//   - logging-set-level: the gateway does not declare the logging
//     capability (its logs go to stderr).
var conformanceScenarios = []string{
	"server-initialize",
	"ping",
	"tools-list",
	"server-sse-multiple-streams",
	"dns-rebinding-protection",
}

type conformanceCheck struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

func TestConformance(t *testing.T) {
	t.Parallel()
	gw := startHTTP(t, writeConfig(t, upstreams{"everything": everythingEntry(t)}, nil))
	cli := filepath.Join(npmDir, "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, sc := range conformanceScenarios {
		t.Run(sc, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(testutil.Context(t))
			defer cancel()
			cmd := exec.CommandContext(ctx, nodeBin(t), cli, "server", "--url", gw.url, "--scenario", sc, "-o", dir)
			cmd.Env = baseEnv("NO_COLOR=1")
			cmd.Dir = dir
			cmd.WaitDelay = 5 * time.Second
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("conformance %s timed out:\n%s", sc, tail(string(out), 3000))
			}
			files, _ := filepath.Glob(filepath.Join(dir, "*", "checks.json"))
			if len(files) != 1 {
				t.Fatalf("conformance %s (%v) wrote %d checks.json files:\n%s", sc, err, len(files), tail(string(out), 3000))
			}
			b, rerr := os.ReadFile(files[0])
			if rerr != nil {
				t.Fatal(rerr)
			}
			var checks []conformanceCheck
			if jerr := json.Unmarshal(b, &checks); jerr != nil {
				t.Fatalf("checks.json: %v", jerr)
			}
			passed := 0
			for _, c := range checks {
				switch c.Status {
				case "SUCCESS":
					passed++
				case "FAILURE":
					t.Errorf("%s: %s FAILED: %s", sc, c.ID, c.ErrorMessage)
				case "WARNING":
					t.Logf("%s: %s warning: %s", sc, c.ID, c.ErrorMessage)
				}
			}
			if passed == 0 {
				t.Errorf("%s: no check passed:\n%s", sc, b)
			}
			if err != nil && !t.Failed() {
				t.Errorf("conformance %s exited with %v although every check passed:\n%s", sc, err, tail(string(out), 3000))
			}
			t.Logf("%s: %d/%d checks passed", sc, passed, len(checks))
		})
	}
}
