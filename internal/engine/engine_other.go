//go:build 386 || arm

// Package engine is the sandbox's unsafe access to the QuickJS engine. On
// 32-bit platforms the engine's layout differs from the one this package
// was written for, so Attach refuses every VM there and the sandbox cannot
// run.
package engine

import (
	"errors"

	"modernc.org/quickjs"
)

// ErrLayout is the error of Attach on a platform this package does not
// support.
var ErrLayout = errors.New("the sandbox needs a 64-bit platform")

// Engine is the engine access of one quickjs.VM; none exists here.
type Engine struct{}

// NewVM always fails on 32-bit platforms.
func NewVM() (*quickjs.VM, *Engine, error) { return nil, nil, ErrLayout }

// Attach always fails on 32-bit platforms.
func Attach(*quickjs.VM) (*Engine, error) { return nil, ErrLayout }

// ModuleLoader answers module loads (see the 64-bit package).
type ModuleLoader func(name string) (Module, error)

// Module is what a ModuleLoader answers.
type Module struct {
	Code     []byte
	Source   string
	Strip    bool
	Compiled func([]byte)
}

// HostCall is the Go side of a host call function.
type HostCall func(op, payload string, p *Promise) error

// Promise is the promise of one host call.
type Promise struct{}

func (e *Engine) Detach()                                                           {}
func (e *Engine) Drop()                                                             {}
func (e *Engine) RunGC()                                                            {}
func (e *Engine) StripSource()                                                      {}
func (e *Engine) Kick()                                                             {}
func (e *Engine) InterruptCounter() int32                                           { return 0 }
func (e *Engine) Memory() (used, limit int64)                                       { return 0, 0 }
func (e *Engine) DefineHostCall(string, string, HostCall, func(error) string) error { return ErrLayout }
func (e *Engine) TrackRejections(func(bool) bool)                                   {}
func (e *Engine) Unhandled() bool                                                   { return false }
func (e *Engine) TakeRejections(func(quickjs.Value, bool) error) error              { return nil }
func (e *Engine) WrapAllocator(func()) error                                        { return ErrLayout }
func (e *Engine) SetModuleLoader(ModuleLoader)                                      {}
func (e *Engine) DefineChunkLoader(string, func(string) ([]byte, error)) error      { return ErrLayout }
func (p *Promise) Resolve(string) error                                             { return ErrLayout }
func (p *Promise) Fail(quickjs.Value, ...string) error                              { return ErrLayout }
func (p *Promise) Site() (line, col int, ok bool)                                   { return 0, 0, false }
func (p *Promise) Free()                                                            {}
func (e *Engine) GuardArrayMethods(func() uint64, func(string, uint64, uint64)) error {
	return ErrLayout
}
func (e *Engine) GuardStringMethods(quickjs.Value, func() uint64) error { return ErrLayout }

// Description is what Describe found.
type Description struct {
	IsError                    bool
	Class                      int
	Name, Message, Stack, Hint string
}

// NotRun stands, in a Description, for a value only script code could
// produce.
const NotRun = "[computed by a getter or a Proxy, not run once the script has ended]"

func (e *Engine) Describe(quickjs.Value, []quickjs.Value) Description { return Description{Class: -1} }
