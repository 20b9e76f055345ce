//go:build unix

package bench

import (
	"syscall"
	"time"
)

// CPUClock returns the CPU time (user and system) the process has used: a benchmark's figure
// that a machine busy with other work does not inflate, unlike ns/op. Zero where unsupported.
func CPUClock() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
