// Package peakrss lets a test measure a child process's peak memory: the child prints its own
// high-water mark (Print) and the test reads it from the output (Of). The child reads it itself
// (VmHWM): the rusage a parent gets carries the parent's own high-water mark into a child it
// forked while large, which made every child look as large as the test. For tests only.
package peakrss

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// line prefixes the line on which a child reports its peak RSS in bytes.
const line = "peak RSS: "

// Print writes the process's peak RSS to standard output, where Of finds it; nothing where
// /proc is not there.
func Print() {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				fmt.Printf("%s%d\n", line, kb<<10)
			}
		}
	}
}

// Of is the peak a child that ran Print reported in out, else what its rusage says.
func Of(cmd *exec.Cmd, out string) int64 {
	for l := range strings.Lines(out) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), line); ok {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil {
				return n
			}
		}
	}
	return cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10
}
