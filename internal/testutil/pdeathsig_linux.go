package testutil

import "syscall"

// dieWithParent makes the child get SIGQUIT (PostgreSQL's immediate
// shutdown) when the thread that started it exits.
func dieWithParent(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGQUIT }
