package hook

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
)

// ProfileEnv names a file to write a CPU profile of the whole hook run to (docs/benchmarks.md):
// each run is its own process, so a profile of the process is a profile of the run.
const ProfileEnv = "OPENSTACK_SYNC_CPUPROFILE"

// TraceEnv names a file to write a Go execution trace of the whole hook run to: the wall-clock
// view (what waits for what) that a CPU profile cannot give, read with `go tool trace`.
const TraceEnv = "OPENSTACK_SYNC_TRACE"

// startProfile starts the CPU profile ProfileEnv asks for and returns its stop; a profile that
// cannot be written is reported and the run goes on without it.
func startProfile(lookupEnv hookenv.LookupFunc, stderr io.Writer) func() {
	stopTrace := startTrace(lookupEnv, stderr)
	stopProfile := startCPUProfile(lookupEnv, stderr)
	return func() { stopProfile(); stopTrace() }
}

func startTrace(lookupEnv hookenv.LookupFunc, stderr io.Writer) func() {
	path, ok := lookupEnv(TraceEnv)
	if !ok || path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		if err = trace.Start(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: not tracing: %v\n", TraceEnv, err)
		return func() {}
	}
	return func() {
		trace.Stop()
		f.Close()
	}
}

func startCPUProfile(lookupEnv hookenv.LookupFunc, stderr io.Writer) func() {
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
