package hook

import (
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

// tuneGC sets the collector's target for the run unless the pod's GOGC chose one.
func tuneGC(lookupEnv hookenv.LookupFunc) {
	if v, ok := lookupEnv("GOGC"); ok && v != "" {
		return
	}
	debug.SetGCPercent(GCPercent)
}
