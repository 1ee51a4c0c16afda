//go:build 386 || arm

package sandbox

import "errors"

// On 32-bit platforms the engine's value layout differs, and the sandbox's
// host calls, rejection tracking and limits rely on the engine internals of
// internals.go and hostcall.go: no VM can be created there.
type internals struct{}

func installInternals(*qjsVM) (*internals, error) {
	return nil, errors.New("the sandbox needs a 64-bit platform")
}
func (t *internals) take() ([]string, error)        { return nil, nil }
func (t *internals) release()                       {}
func (t *internals) pendingAny() bool               { return false }
func (t *internals) kick()                          {}
func (t *internals) memoryExhausted() bool          { return false }
func (t *internals) memory() (used, limit int64)    { return 0, 0 }
func (t *internals) settle(int, bool, string) error { return nil }
