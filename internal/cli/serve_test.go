package cli

import (
	"net"
	"strings"
	"testing"
)

// An address that cannot be bound (an invalid port, a port in use) is
// refused before any upstream server is started.
func TestServeListensBeforeStartingUpstreams(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, addr := range []string{"127.0.0.1:99999", taken.Addr().String()} {
		t.Run(addr, func(t *testing.T) {
			t.Setenv("CODEMODE_AUTH_TOKEN", "")
			dir := t.TempDir()
			// The upstream's command does not exist: an attempt to start it
			// fails at once and is logged ("upstream failed to start ...
			// probe-upstream-binary") before serve returns, since closing
			// the gateway waits for its connection attempts. No sleep: the
			// log says whether it was tried.
			cfg := writeFile(t, dir, "codemode.json", `{"mcpServers": {"probe": {"command": "/nonexistent/probe-upstream-binary"}}}`)
			code, _, stderr := invoke(t, "", "serve", "--config", cfg, "--http", addr)
			if code != ExitUsage || !strings.Contains(stderr, addr) {
				t.Fatalf("exit %d, want %d with a message naming %s; stderr:\n%s", code, ExitUsage, addr, stderr)
			}
			if strings.Contains(stderr, "probe-upstream-binary") || strings.Contains(stderr, "upstream") {
				t.Errorf("the upstream server was started although the address could not be bound; stderr:\n%s", stderr)
			}
		})
	}
}
