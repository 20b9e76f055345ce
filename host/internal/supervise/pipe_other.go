//go:build !linux

package supervise

import (
	"fmt"
	"os"
	"syscall"
)

// processSupported: elsewhere a child would outlive a killed parent, spinning with nothing to
// stop it, so the hook keeps the termination checks (ModeFromEnv).
const processSupported = false

func openReportPipe() (*os.File, error) {
	return nil, fmt.Errorf("%s is set, but the hook's supervisor runs only on Linux; the variable is internal: unset it", EnvChild)
}

func newReportPipe() (r, w *os.File, err error) { return os.Pipe() }

func parentDeathSignal() *syscall.SysProcAttr { return nil }
