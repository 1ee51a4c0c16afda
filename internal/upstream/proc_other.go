//go:build !unix

package upstream

import "os/exec"

// On non-unix systems the SDK's own termination of the child is all there is.
func setProcessGroup(*exec.Cmd) {}

func killProcessGroup(int) {}
