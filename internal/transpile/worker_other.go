//go:build !linux

package transpile

import (
	"errors"
	"os"
)

// limitData has no equivalent here: only the Go runtime's soft limit and
// the time limit hold.
func limitData(int64) error { return errors.New("not supported on this platform") }

// nearMemoryLimit cannot tell here.
func nearMemoryLimit(*os.ProcessState) bool { return false }
