package serve

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/codemode-mcp/codemode/internal/catalog"
	"github.com/codemode-mcp/codemode/internal/config"
	"github.com/codemode-mcp/codemode/internal/run"
	"github.com/codemode-mcp/codemode/internal/testutil"
	"github.com/codemode-mcp/codemode/internal/upstream"
)

// recorder keeps the records logged at Warn and above.
type recorder struct {
	mu   sync.Mutex
	recs []string
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	if rec.Level >= slog.LevelWarn {
		r.mu.Lock()
		r.recs = append(r.recs, rec.Level.String()+" "+rec.Message)
		r.mu.Unlock()
	}
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// Ending a session because the gateway was told to stop (SIGINT/SIGTERM end
// its ctx) is no error: serving returns nil and logs nothing at Warn or
// above. The SDK's Server.Run logged "server run cancelled" at Error.
func TestServeTransportCancelIsNotAnError(t *testing.T) {
	m := upstream.New(nil, nil)
	defer m.Close()
	cfg := config.Default()
	rec := &recorder{}
	s := New(run.New(cfg, catalog.New(m), m, nil), m, &Options{Logger: slog.New(rec)})
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.serveTransport(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	cancel()
	if err := testutil.Wait(t, done, "the end of serving when its ctx ended"); err != nil {
		t.Errorf("serving ended with %v after a requested shutdown, want nil", err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.recs) > 0 {
		t.Errorf("a requested shutdown was logged as a problem: %q", rec.recs)
	}
}
