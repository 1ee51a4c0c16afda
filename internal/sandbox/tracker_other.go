//go:build 386 || arm

package sandbox

import "modernc.org/quickjs"

// On 32-bit platforms the engine's value layout differs and the rejection
// tracker is not installed: a rejection nobody handles goes unreported there,
// except for the agent module's own.
type rejectionTracker struct{}

func installTracker(*quickjs.VM, *qjsVM) *rejectionTracker { return nil }
func (t *rejectionTracker) take(*qjsVM) ([]string, error)  { return nil, nil }
func (t *rejectionTracker) release()                       {}
