package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/codemode-mcp/codemode/internal/run"
)

// Tool names past the cap per server share one series.
func TestToolCap(t *testing.T) {
	m := New(&Options{MaxToolsPerServer: 2, NoProcess: true})
	ctx, ro := m.StartRun(context.Background(), &run.RunStart{Origin: run.Origin{Surface: "run"}})
	for _, tool := range []string{"a", "b", "c", "d", "a"} {
		_, end := ro.StartCall(ctx, &run.CallStart{ServerID: "s", Tool: tool})
		end(&run.CallEnd{Outcome: run.CallOK, Duration: time.Millisecond})
	}
	// Another server has its own cap.
	_, end := ro.StartCall(ctx, &run.CallStart{ServerID: "t", Tool: "c"})
	end(&run.CallEnd{Outcome: run.CallOK})
	ro.EndRun(ctx, &run.RunEnd{Outcome: "ok", Response: &run.Response{}})

	want := `
# HELP codemode_tool_calls_total Tool calls ended, by server, tool and outcome (ok, tool_error, invalid_input, failed, suspended).
# TYPE codemode_tool_calls_total counter
codemode_tool_calls_total{outcome="ok",server="s",tool="_other"} 2
codemode_tool_calls_total{outcome="ok",server="s",tool="a"} 2
codemode_tool_calls_total{outcome="ok",server="s",tool="b"} 1
codemode_tool_calls_total{outcome="ok",server="t",tool="c"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "codemode_tool_calls_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.runs); n != 1 {
		t.Errorf("%d run series", n)
	}
}
