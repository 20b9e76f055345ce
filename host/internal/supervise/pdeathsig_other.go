//go:build !linux

package supervise

import "syscall"

// parentDeathSignal: only Linux kills a child with its parent; elsewhere the deadline still
// holds while the parent lives.
func parentDeathSignal() *syscall.SysProcAttr { return nil }
