package transpile

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// limitData sets RLIMIT_DATA to the process's data segment now plus limit.
// Since Linux 4.7 it counts every private writable mapping, which is where
// the Go runtime puts its heap; it does not count the address space the
// runtime only reserves (RLIMIT_AS would, and the runtime reserves
// hundreds of megabytes at start).
func limitData(limit int64) error {
	data, err := vmData()
	if err != nil {
		return err
	}
	n := uint64(data + limit)
	return syscall.Setrlimit(syscall.RLIMIT_DATA, &syscall.Rlimit{Cur: n, Max: n})
}

// vmData reads this process's VmData from /proc/self/status, in bytes.
func vmData() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmData:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no VmData in /proc/self/status")
}

// nearMemoryLimit reports whether an exited worker's peak resident size
// reached half its memory cap: the heap the cap is about, plus what the
// collector needed to scan it.
func nearMemoryLimit(ps *os.ProcessState) bool {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	return ok && ru.Maxrss<<10 >= WorkerMemory/2
}
