package testutil

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// ResidentMiB is this process's resident set size (VmRSS) in MiB, for
// tests that check memory is handed back. Linux only: the caller skips
// elsewhere.
func ResidentMiB(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return kb / 1024
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
