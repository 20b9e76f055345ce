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

// newReportPipe makes the report pipe blocking on both ends. os.Pipe's ends are non-blocking and
// registered with Go's network poller, where every write of the child would wake an idle thread of
// the parent: two wake-ups per plugin call, which cost a converged pass of 1,000 CRs about 15% of
// its CPU (docs/benchmarks.md). Blocking, a write wakes the parent only while it waits in read.
func newReportPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, err
	}
	// A larger pipe holds the reports of a whole readPause with room to spare; the default is
	// enough too, so a refusal is ignored.
	_, _, _ = syscall.Syscall(syscall.SYS_FCNTL, uintptr(p[1]), fSetPipeSize, 1<<20)
	return os.NewFile(uintptr(p[0]), "supervisor-reports"), os.NewFile(uintptr(p[1]), "supervisor-reports"), nil
}

// fSetPipeSize is F_SETPIPE_SZ, which package syscall does not name.
const fSetPipeSize = 1031

// parentDeathSignal kills the child when the parent dies (its pod is killed, or it is), so a
// child spinning in guest code never outlives the supervisor that would have stopped it.
func parentDeathSignal() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
