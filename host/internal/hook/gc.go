package hook

import (
	"runtime"
	"runtime/debug"

	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
)

// GCPercent is the Go collector's target of a hook run when the pod sets no GOGC: a new cycle
// when the heap has grown by a quarter over what the last one kept. A run is one short process
// whose live heap is mostly what it holds per CR (each spec and status, the memo's records), so
// with Go's default of 100 its peak was twice that (47 MB of heap for 24 MB live at 5,000
// site-shaped runbooks, 117 MiB peak RSS); at 25 the same run peaked at 98 MiB for a few more
// milliseconds of collection (docs/scaling.md); a single-CR run measured the same CPU and 1 MiB
// less either way.
const GCPercent = 25

// tuneGC sets the collector's target for the run unless the pod's GOGC chose one. The target
// takes effect at the end of the first cycle, which starts at Go's smallest heap goal for the
// default target (4 MiB): that goal scales with the target, so a process started at 25 collected
// from 1 MiB of heap on, six cycles of a single-CR run (about 15 ms of its CPU) before its heap
// reached 4 MiB, for no lower peak (that comes later, while the module compiles, at 25 either
// way; docs/benchmarks.md, "Start-up of a hook run").
func tuneGC(lookupEnv hookenv.LookupFunc) {
	if v, ok := lookupEnv("GOGC"); ok && v != "" {
		return
	}
	first := &gcSentinel{}
	runtime.AddCleanup(first, func(int) { setGCPercent(GCPercent) }, 0)
}

// gcSentinel is unreachable from birth: its cleanup runs after the first collection. It holds a
// pointer so that it is not batched with other small allocations, whose cleanups can be late.
type gcSentinel struct{ _ *int }

// setGCPercent is debug.SetGCPercent; tests see when it is called.
var setGCPercent = debug.SetGCPercent
