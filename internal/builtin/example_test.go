package builtin_test

import (
	"context"
	"fmt"
	"os"

	"github.com/codemode-mcp/codemode/internal/builtin"
	"github.com/codemode-mcp/codemode/internal/builtin/state"
	"github.com/codemode-mcp/codemode/internal/builtin/thoughtbox"
	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

func Example() {
	dir, _ := os.MkdirTemp("", "codemode-builtin-example-")
	defer os.RemoveAll(dir)
	st := store.New(&store.Options{Dir: dir})
	defer st.Close()

	// The built-ins join the configured servers, are dialed in memory for
	// the catalog, and answer their tool calls in process.
	cfg := config.Default()
	set := builtin.NewSet(thoughtbox.New(st, nil), state.New(st, nil))
	fmt.Println(set.Configure(cfg, nil))
	mgr := upstream.New(cfg.Servers, &upstream.Options{Dial: set.Dial()})
	defer mgr.Close()
	r := run.New(cfg, catalog.New(mgr), set.Caller(mgr), nil)

	ctx := builtin.WithCaller(context.Background(), builtin.Caller{Client: "default", Session: "example"})
	resp := r.Run(ctx, run.Request{Code: `import { set, get } from "@codemode/servers/store";
await set({ key: "n", value: 41 });
globalThis.__codemode_result__ = (await get({ key: "n" })).value + 1;`})
	fmt.Println(string(resp.Result))
	// Output:
	// [thoughtbox store]
	// 42
}
