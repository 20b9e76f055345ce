package supervise

import (
	"fmt"
	"os"
	"syscall"
)

// processSupported: the supervisor needs a child that dies with it (parentDeathSignal), which
// only Linux offers.
const processSupported = true

// openReportPipe opens the child's end of the report pipe, refusing a descriptor that is not one.
func openReportPipe() (*os.File, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(childFD, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		return nil, fmt.Errorf("%s is set but descriptor %d is not the supervisor's pipe; the variable is internal: unset it",
			EnvChild, childFD)
	}
	// Nothing this process starts may hold the pipe open after it dies.
	syscall.CloseOnExec(childFD)
	return os.NewFile(childFD, "supervisor"), nil
}

// parentDeathSignal kills the child when the parent dies (its pod is killed, or it is), so a
// child spinning in guest code never outlives the supervisor that would have stopped it.
func parentDeathSignal() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
