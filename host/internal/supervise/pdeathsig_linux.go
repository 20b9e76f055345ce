package supervise

import "syscall"

// parentDeathSignal kills the child when the parent dies (its pod is killed, or it is), so a
// child spinning in guest code never outlives the supervisor that would have stopped it.
func parentDeathSignal() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
