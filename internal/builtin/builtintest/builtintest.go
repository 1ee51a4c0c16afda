// Package builtintest builds gateways with the built-in servers for tests:
// a run.Runner over a data store, on SQLite or PostgreSQL. Only _test.go
// files import it.
package builtintest

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/codemode-mcp/codemode/internal/builtin"
	"github.com/codemode-mcp/codemode/internal/builtin/state"
	"github.com/codemode-mcp/codemode/internal/builtin/thoughtbox"
	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/store"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// TBModule is the module specifier tests import to define the global tb.
const TBModule = "@codemode/test/tb"

// Gateway is a runner with the built-ins over one store.
type Gateway struct {
	Store    *store.Store
	Config   *config.Config
	Manager  *upstream.Manager
	Builtins *builtin.Set
	Runner   *run.Runner
}

// New returns a gateway whose built-ins keep their data in st, with cfg
// (config.Default() if nil). It closes with the test.
func New(t testing.TB, st *store.Store, cfg *config.Config) *Gateway {
	t.Helper()
	if cfg == nil {
		cfg = config.Default()
	}
	set := builtin.NewSet(thoughtbox.New(st, nil), state.New(st, &state.Options{Limits: cfg.Store}))
	set.Configure(cfg, nil)
	m := upstream.New(cfg.Servers, &upstream.Options{Dial: set.Dial()})
	t.Cleanup(func() { m.Close() })
	r := run.New(cfg, catalog.New(m), set.Caller(m), nil)
	return &Gateway{Store: st, Config: cfg, Manager: m, Builtins: set, Runner: r}
}

// SQLite returns a store in a fresh directory.
func SQLite(t testing.TB) *store.Store {
	st := store.New(&store.Options{Dir: t.TempDir()})
	t.Cleanup(func() { st.Close() })
	return st
}

// Postgres returns a store in a fresh PostgreSQL database, or skips.
func Postgres(t testing.TB) *store.Store {
	st := store.New(&store.Options{URL: testutil.Postgres(t)})
	t.Cleanup(func() { st.Close() })
	return st
}

// Backends runs f once per backend (the PostgreSQL run skips, visibly,
// without PostgreSQL).
func Backends(t *testing.T, f func(t *testing.T, st *store.Store)) {
	t.Run("sqlite", func(t *testing.T) { f(t, SQLite(t)) })
	t.Run("postgres", func(t *testing.T) { f(t, Postgres(t)) })
}

// Run runs code as a module with the global tb defined (the thoughtbox
// surface's SDK), as caller c.
func (g *Gateway) Run(ctx context.Context, c builtin.Caller, code string) *run.Response {
	ctx = builtin.WithCaller(ctx, c)
	// The longest timeout a request may ask for: a test's runs must end on
	// their own, however loaded the machine (200 concurrent runs under
	// -race outlast the 30 s default).
	return g.Runner.RunWith(ctx, run.Request{Code: code, Limits: config.Limits{TimeoutMs: g.Config.MaxLimits.TimeoutMs}}, run.Extra{
		Prelude: []string{TBModule},
		Modules: func(_ context.Context, _ *run.View, spec string) (string, bool) {
			if spec == TBModule {
				return thoughtbox.SDKSource(), true
			}
			return "", false
		},
	})
}

// Result runs code and decodes its result into v, failing the test on an
// error diagnostic.
func (g *Gateway) Result(t testing.TB, c builtin.Caller, code string, v any) *run.Response {
	t.Helper()
	resp := g.Run(context.Background(), c, code)
	if resp.Failed() {
		b, _ := json.MarshalIndent(resp.Diagnostics, "", "  ")
		t.Fatalf("run failed:\n%s\ncode:\n%s", b, code)
	}
	if v != nil {
		if err := json.Unmarshal(resp.Result, v); err != nil {
			t.Fatalf("result %s: %v", resp.Result, err)
		}
	}
	return resp
}
