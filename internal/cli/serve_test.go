package cli

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
			marker := filepath.Join(dir, "started")
			// The upstream leaves a mark as soon as it is started.
			cfg := writeFile(t, dir, "codemode.json", fmt.Sprintf(`{"mcpServers": {"probe": {"command": "/bin/sh", "args": ["-c", %q]}}}`,
				"touch "+marker+"; sleep 30"))
			code, _, stderr := invoke(t, "", "serve", "--config", cfg, "--http", addr)
			if code != ExitUsage || !strings.Contains(stderr, addr) {
				t.Fatalf("exit %d, want %d with a message naming %s; stderr:\n%s", code, ExitUsage, addr, stderr)
			}
			time.Sleep(500 * time.Millisecond) // a process started last moment would have touched it by now
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the upstream server was started although the address could not be bound")
			}
		})
	}
}
