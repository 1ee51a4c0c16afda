//go:build unix

package upstream

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts a stdio server in its own process group, so that
// closing it can also end what it started (npx, uvx and shell wrappers run
// the real server as a grandchild), and so that a Ctrl-C aimed at the
// gateway's terminal reaches the gateway, which then closes its servers in
// order, rather than every child at once.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killProcessGroup sends SIGKILL to the process group led by pid. It is a
// no-op for pid <= 0: kill(0) and kill(-1) would hit the gateway itself.
func killProcessGroup(pid int) {
	if pid <= 0 {
		return
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}
