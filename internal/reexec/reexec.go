// Package reexec runs this program's own executable again as a helper
// process in a named mode, so that work which cannot be stopped or bounded
// inside the process (a compiler that never returns, or that allocates
// until the process dies) runs where it can be killed and capped, without
// shipping a second binary.
//
// Start with [Register] (from an init function of the package that owns the
// mode) and [Command]. Every program that may start such a helper must call
// [Init] first thing in main, and every test binary in its TestMain:
//
//	func main() {
//		if reexec.Init() {
//			return
//		}
//		...
//	}
//
// It is docker's reexec pattern: a helper is the same executable started
// with the mode's name in its environment, and Init runs the mode's
// function instead of the program. A test binary whose TestMain forgets
// Init does not run its tests again in the helper (Command passes flags
// that select none): it exits, and the caller reports that the helper did
// not start.
package reexec

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"sync"
)

// modeEnv names the mode a helper process runs in.
const modeEnv = "CODEMODE_REEXEC"

var (
	mu    sync.Mutex
	modes = map[string]func(){}
)

// Register makes name a mode that Init can run: main runs in the helper
// process, and the process exits with status 0 when it returns. Register
// is meant for init functions; registering a name twice panics.
func Register(name string, main func()) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := modes[name]; dup {
		panic("reexec: mode " + name + " registered twice")
	}
	modes[name] = main
}

// Init runs the mode this process was started in, if any, and reports
// whether it did: the caller then returns (from main or TestMain) without
// doing anything else. In an ordinary start it does nothing and returns
// false.
func Init() bool {
	name, ok := os.LookupEnv(modeEnv)
	if !ok {
		return false
	}
	os.Unsetenv(modeEnv) // not inherited by anything the mode starts
	mu.Lock()
	f := modes[name]
	mu.Unlock()
	if f == nil {
		fmt.Fprintf(os.Stderr, "reexec: no mode %q in this program (registered: %s)\n", name, strings.Join(names(), ", "))
		os.Exit(2)
	}
	f()
	return true
}

func names() []string {
	mu.Lock()
	defer mu.Unlock()
	out := make([]string, 0, len(modes))
	for n := range modes {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Command returns a command that starts this executable in mode name. Its
// environment holds only the mode and the Go runtime's own settings
// (GOGC, GODEBUG, GOCOVERDIR, ...): a helper needs nothing else, and the
// gateway's credentials have no business there. The caller sets up its
// files (ExtraFiles for a protocol, Stderr) and starts it.
func Command(name string) (*exec.Cmd, error) {
	exe, err := executable()
	if err != nil {
		return nil, fmt.Errorf("reexec: cannot find this program's executable: %w", err)
	}
	// The flags make a test binary whose TestMain does not call Init run
	// no test, benchmark, fuzz target or example, instead of running the
	// whole suite again in the helper. The program itself never sees them:
	// Init runs the mode before anything parses flags.
	cmd := exec.Command(exe, "-test.run=^$", "-test.bench=^$", "-test.fuzz=^$", "-test.count=1")
	cmd.Env = []string{modeEnv + "=" + name}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GO") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	return cmd, nil
}

// executable is the file this process runs. On Linux /proc/self/exe names
// it even if the file was replaced or removed since the process started
// (an upgrade in place), where os.Executable would name the new file or
// none.
func executable() (string, error) {
	if runtime.GOOS == "linux" {
		if _, err := os.Stat("/proc/self/exe"); err == nil {
			return "/proc/self/exe", nil
		}
	}
	return os.Executable()
}
