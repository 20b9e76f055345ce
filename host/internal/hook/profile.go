package hook

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"

	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
)

// ProfileEnv names a file to write a CPU profile of the whole hook run to (docs/benchmarks.md):
// each run is its own process, so a profile of the process is a profile of the run. "%p" in the
// name stands for the process id, so that every run of a benchmark keeps its own profile (a
// single-CR run gives a dozen samples; go tool pprof merges the files of many).
const ProfileEnv = "OPENSTACK_SYNC_CPUPROFILE"

// TraceEnv names a file to write a Go execution trace of the whole hook run to: the wall-clock
// view (what waits for what) that a CPU profile cannot give, read with `go tool trace`. "%p" in
// the name stands for the process id, as in ProfileEnv.
const TraceEnv = "OPENSTACK_SYNC_TRACE"

// startProfile starts the CPU profile ProfileEnv and the execution trace TraceEnv ask for and
// returns their stop; a file that cannot be written is reported and the run goes on without it.
func startProfile(lookupEnv hookenv.LookupFunc, stderr io.Writer) func() {
	stopTrace := startRecording(lookupEnv, stderr, TraceEnv, "tracing", trace.Start, trace.Stop)
	stopProfile := startRecording(lookupEnv, stderr, ProfileEnv, "profiling", pprof.StartCPUProfile, pprof.StopCPUProfile)
	return func() { stopProfile(); stopTrace() }
}

// startRecording starts one of the runtime's recorders into the file the variable names.
func startRecording(lookupEnv hookenv.LookupFunc, stderr io.Writer, env, what string, start func(io.Writer) error, stop func()) func() {
	path, ok := lookupEnv(env)
	if !ok || path == "" {
		return func() {}
	}
	f, err := os.Create(strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid())))
	if err == nil {
		if err = start(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: not %s: %v\n", env, what, err)
		return func() {}
	}
	return func() {
		stop()
		f.Close()
	}
}
