//go:build 386 || arm

package sandbox

import "modernc.org/quickjs"

// On 32-bit platforms the engine's value layout differs and none of the
// engine internals of internals.go are used: a rejection nobody handles goes
// unreported (except the agent module's own), a timeout can overshoot by up
// to 10,000 slow built-in calls, and running out of memory without room for
// the error is reported as an uncaught exception.
type internals struct{}

func installInternals(*quickjs.VM) *internals      { return nil }
func (t *internals) take(*qjsVM) ([]string, error) { return nil, nil }
func (t *internals) release()                      {}
func (t *internals) pendingAny() bool              { return false }
func (t *internals) kick()                         {}
func (t *internals) memory() (used, limit int64)   { return 0, 0 }
