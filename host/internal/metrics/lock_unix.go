//go:build unix

package metrics

import (
	"os"
	"syscall"
)

// lockFile blocks until this process holds f's exclusive lock; closing f releases it.
func lockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }
