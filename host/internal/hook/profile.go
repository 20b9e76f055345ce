package hook

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"

	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
)

// ProfileEnv names a file to write a CPU profile of the whole hook run to (docs/benchmarks.md):
// each run is its own process, so a profile of the process is a profile of the run.
const ProfileEnv = "OPENSTACK_SYNC_CPUPROFILE"

// startProfile starts the CPU profile ProfileEnv asks for and returns its stop; a profile that
// cannot be written is reported and the run goes on without it.
func startProfile(lookupEnv hookenv.LookupFunc, stderr io.Writer) func() {
	path, ok := lookupEnv(ProfileEnv)
	if !ok || path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: not profiling: %v\n", ProfileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}
