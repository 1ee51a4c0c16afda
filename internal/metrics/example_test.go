package metrics_test

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"

	"github.com/codemode-mcp/codemode/internal/metrics"
	"github.com/codemode-mcp/codemode/internal/run"
)

// Metrics observe runs (run.Options.Observer) and serve what they counted.
func Example() {
	m := metrics.New(&metrics.Options{NoProcess: true})
	// A Runner calls the observer; here, by hand, one run of surface "run".
	ctx, ro := m.StartRun(context.Background(), &run.RunStart{Origin: run.Origin{Surface: "run"}})
	ro.EndRun(ctx, &run.RunEnd{Outcome: "ok", Response: &run.Response{}})

	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "codemode_runs_total") {
			fmt.Println(l)
		}
	}
	// Output: codemode_runs_total{outcome="ok",surface="run"} 1
}
