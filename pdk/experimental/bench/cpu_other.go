//go:build !unix

package bench

import "time"

// CPUClock returns the CPU time the process has used; this platform has no such clock, so zero.
func CPUClock() time.Duration { return 0 }
