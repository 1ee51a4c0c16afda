package sandbox

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/codemode-mcp/codemode/internal/diag"
	"github.com/codemode-mcp/codemode/internal/testutil"
)

// stuckHost answers one operation, "stuck", with a handler that ignores
// its context until release is closed. The script awaits it alone, so it
// runs on the engine's goroutine: the engine cannot return to the event
// loop, as inside a built-in that never checks the interrupt.
func stuckHost(release <-chan struct{}, started chan<- struct{}) *Options {
	return &Options{
		Resolve: func(ctx context.Context, s string) (string, error) {
			return `import { call } from "@codemode/internal"; export const stuck = () => call("stuck", null);`, nil
		},
		Handle: func(ctx context.Context, op string, p json.RawMessage) (json.RawMessage, error) {
			started <- struct{}{}
			<-release // ignores ctx on purpose
			return json.RawMessage(`1`), nil
		},
	}
}

// waitStopped waits until the run's JavaScript has stopped.
func waitStopped(t *testing.T, res *Result) {
	t.Helper()
	testutil.Wait(t, res.Stopped, "the detached run's stop")
}

// A run whose engine does not stop when interrupted is still answered:
// SANDBOX_LIMIT at its deadline, with the logs so far, and it stops when
// the engine returns. (Whether the engine got stuck before the deadline
// depends on the machine's speed, so what is asserted depends on whether
// the handler started; on any machine but a frozen one it does.)
func TestStuckRunIsAnsweredAtItsDeadline(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{}, 1)
	opts := stuckHost(release, started)
	opts.Limits = Limits{Timeout: time.Second}
	res := Run(context.Background(), `import { stuck } from "@codemode/servers/x";
console.log("before");
await stuck();
console.log("after");`, opts)
	stuck := false
	select {
	case <-started:
		stuck = true
	default:
	}
	close(release)
	if !res.TimedOut {
		t.Fatalf("TimedOut false: %s", diagString(res))
	}
	wantLimit(t, res, "timeoutMs (1000 ms)")
	if stuck {
		if !res.Detached {
			t.Errorf("the engine was stuck in a handler, but the run was not detached: %s", diagString(res))
		}
		if len(res.Logs) != 1 || res.Logs[0].Message != "before" {
			t.Errorf("logs: %s", logString(res))
		}
	}
	waitStopped(t, res)
}

// The same when the caller cancels: CANCELLED, answered without the engine.
func TestStuckRunIsAnsweredWhenCancelled(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{}, 1)
	opts := stuckHost(release, started)
	opts.Limits = Limits{Timeout: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	res := Run(ctx, `import { stuck } from "@codemode/servers/x"; await stuck();`, opts)
	close(release)
	if !res.Detached || !res.Canceled {
		t.Fatalf("Detached %v, Canceled %v: %s", res.Detached, res.Canceled, diagString(res))
	}
	// It was waiting for the host, not inside a built-in: the message
	// says which.
	if d := wantDiag(t, res, diag.Canceled); !strings.Contains(d.Message, "cancelled") || !strings.Contains(d.Message, "host operation") || strings.Contains(d.Message, "built-in") {
		t.Errorf("message %q", d.Message)
	}
	waitStopped(t, res)
}
