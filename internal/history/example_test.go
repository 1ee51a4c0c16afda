package history_test

import (
	"context"
	"fmt"
	"os"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/history"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// A Recorder observes a Runner's runs and writes them to the store's
// history, off the runs' path.
func Example() {
	dir, _ := os.MkdirTemp("", "history-example")
	defer os.RemoveAll(dir)
	st := store.New(&store.Options{Dir: dir})
	defer st.Close()

	rec := history.New(st.History(), nil)
	cfg := config.Default()
	mgr := upstream.New(nil, nil)
	defer mgr.Close()
	r := run.New(cfg, catalog.New(mgr), mgr, &run.Options{Observer: rec})

	ctx := run.WithOrigin(context.Background(), run.Origin{Surface: "example"})
	resp := r.Run(ctx, run.Request{Code: `globalThis.__codemode_result__ = 6 * 7`})
	rec.Close(context.Background()) // writes what is queued

	got, _ := st.History().Get(context.Background(), resp.RunID())
	fmt.Println(got.Surface, got.Outcome, got.Code)
	// Output: example ok globalThis.__codemode_result__ = 6 * 7
}
