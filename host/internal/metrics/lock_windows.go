package metrics

import (
	"os"

	"golang.org/x/sys/windows"
)

// lockFile blocks until this process holds f's exclusive lock; closing f releases it. Hooks run
// on Linux, but the binary's author commands (run, plugin) also build for Windows.
func lockFile(f *os.File) error {
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, new(windows.Overlapped))
}
