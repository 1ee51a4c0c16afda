//go:build !linux

package testutil

import "syscall"

// dieWithParent is Linux-only; elsewhere TestMain's StopPostgres is the
// only way the server stops.
func dieWithParent(*syscall.SysProcAttr) {}
