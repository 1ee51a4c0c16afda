package reexec_test

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/codemode-mcp/codemode/internal/reexec"
)

// A helper started in a mode this program does not have says so and exits
// with status 2, instead of running the program (or its tests) again.
func TestUnknownMode(t *testing.T) {
	cmd, err := reexec.Command("no-such-mode")
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), `no mode "no-such-mode"`) || !strings.Contains(string(out), "example-upper") {
		t.Fatalf("err %v, output %q", err, out)
	}
}

// The helper's environment carries only the mode and the Go runtime's
// settings: nothing of the gateway's (credentials included) leaks into it.
func TestCommandEnvironment(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "not for helpers")
	t.Setenv("GOGC", "321")
	cmd, err := reexec.Command("example-upper")
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Join(cmd.Env, "\n")
	if strings.Contains(env, "AWS_SECRET") || !strings.Contains(env, "GOGC=321") || !strings.Contains(env, "CODEMODE_REEXEC=example-upper") {
		t.Fatalf("env:\n%s", env)
	}
}

func TestRegisterTwicePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	reexec.Register("example-upper", func() {})
}
