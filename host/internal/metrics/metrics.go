// Package metrics names every number the host reports and carries them to shell-operator's metrics
// file (METRICS_PATH). The framework sees only Recorder, three methods over the fixed catalog
// below; the command wires a File, and a nil Recorder records nothing.
//
// # Cardinality
//
// Every metric has a fixed list of label names, and every label value comes from a small closed
// set: the plugin's name, a result or kind word, a catalog service type, an HTTP method, a status
// class. No CR name, UID, namespace or OpenStack ID is ever a label value; those belong in logs
// and Events.
//
// # Why the host keeps totals
//
// shell-operator (v1.20) puts every operation a hook writes into a metric group named after the
// hook and expires that whole group before applying the next run's operations; it also ignores
// the file of a run that exits non-zero. A counter written as one run's increment would therefore
// show only the last successful run. So File keeps each hook's running totals in a state file
// beside METRICS_PATH (shell-operator's tmp dir, which lives as long as the pod) and writes the
// totals on every run: what Prometheus scrapes are true counters that reset only with the pod,
// and a failed run's counts are published by the next run that succeeds. Histograms are written
// as their _bucket (le), _count and _sum series, which is what histogram_quantile and rate read.
package metrics

import (
	"fmt"
	"slices"
	"strings"
)

// Type is how a metric's values combine.
type Type string

// The three metric types.
const (
	Counter   Type = "counter"
	Gauge     Type = "gauge"
	Histogram Type = "histogram"
)

// Def describes one metric family.
type Def struct {
	Name   string
	Type   Type
	Help   string
	Labels []string
	// Buckets are a histogram's upper bounds, ascending.
	Buckets []float64
}

// Recorder receives the host's measurements. Label values are given in the order of Def.Labels.
// Implementations MUST be safe for concurrent use: reconciles of one group may run in parallel.
type Recorder interface {
	Add(d *Def, v float64, labels ...string)
	Set(d *Def, v float64, labels ...string)
	Observe(d *Def, v float64, labels ...string)
}

// Add, Set and Observe record on r, which may be nil.
func Add(r Recorder, d *Def, v float64, labels ...string) {
	if r != nil {
		r.Add(d, v, labels...)
	}
}

// Set records a gauge on r, which may be nil.
func Set(r Recorder, d *Def, v float64, labels ...string) {
	if r != nil {
		r.Set(d, v, labels...)
	}
}

// Observe records one histogram observation on r, which may be nil.
func Observe(r Recorder, d *Def, v float64, labels ...string) {
	if r != nil {
		r.Observe(d, v, labels...)
	}
}

// Bucket sets.
var (
	// requestBuckets span a fast API read to a slow Ironic write.
	requestBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
	// runBuckets span a no-op run to one near shell-operator's patience.
	runBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
	// loadBuckets span a cached load to a cold compile of a large module.
	loadBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
)

// The catalog. Results and kinds are the words listed in each Help.
var (
	Reconciles = &Def{Name: "openstack_sync_reconciles_total", Type: Counter, Labels: []string{"plugin", "result"},
		Help: "CR reconciles by result: synced, progressing, failed (retried), terminal (not retried until the spec changes)."}
	Deletes = &Def{Name: "openstack_sync_deletes_total", Type: Counter, Labels: []string{"plugin", "result"},
		Help: "Per-CR deletes of plugins with a delete step, by result: deleted, progressing, failed, terminal."}
	Prunes = &Def{Name: "openstack_sync_prunes_total", Type: Counter, Labels: []string{"plugin", "result"},
		Help: "Prunes of one credential group by result: ok, failed, skipped (a CR failed or was unreadable)."}
	Deletions = &Def{Name: "openstack_sync_openstack_deletions_total", Type: Counter, Labels: []string{"plugin", "service"},
		Help: "OpenStack resources deleted (DELETE answered 2xx) by prunes and per-CR deletes."}
	Requests = &Def{Name: "openstack_sync_openstack_requests_total", Type: Counter,
		Labels: []string{"plugin", "service", "method", "status_class"},
		Help:   "OpenStack HTTP requests sent, retries included, by catalog service, method and status class (2xx..5xx, or error when no answer came)."}
	RequestDuration = &Def{Name: "openstack_sync_openstack_request_duration_seconds", Type: Histogram,
		Labels: []string{"plugin", "service", "method"}, Buckets: requestBuckets,
		Help: "Latency of one OpenStack HTTP request attempt."}
	RetryWaits = &Def{Name: "openstack_sync_openstack_retry_waits_total", Type: Counter, Labels: []string{"plugin", "service", "reason"},
		Help: "Waits before re-sending an OpenStack request, by reason: retry_after (429/503 with Retry-After), backoff."}
	Runs = &Def{Name: "openstack_sync_hook_runs_total", Type: Counter, Labels: []string{"plugin", "result"},
		Help: "Hook runs by result: ok, failed (the run exited non-zero)."}
	RunDuration = &Def{Name: "openstack_sync_hook_run_duration_seconds", Type: Histogram, Labels: []string{"plugin"},
		Buckets: runBuckets, Help: "Wall time of one hook run, from reading the binding context to the exit code."}
	RunBudgetExhausted = &Def{Name: "openstack_sync_run_budget_exhausted_total", Type: Counter, Labels: []string{"plugin"},
		Help: "Runs stopped by their time budget (<P>_RUN_BUDGET) before every CR was reconciled."}
	Unreadable = &Def{Name: "openstack_sync_crs_unreadable", Type: Gauge, Labels: []string{"plugin"},
		Help: "CRs the last run could not read (a field of the wrong type); while above 0 no prune runs."}
	FinalizersHeld = &Def{Name: "openstack_sync_finalizers_held", Type: Gauge, Labels: []string{"plugin"},
		Help: "CRs being deleted whose finalizer the last run kept because their cleanup did not complete."}
	PluginLoad = &Def{Name: "openstack_sync_plugin_load_duration_seconds", Type: Histogram, Labels: []string{"plugin"},
		Buckets: loadBuckets, Help: "Time to load a plugin module (read, verify, compile or fetch from the cache, instantiate)."}
	PluginCompile = &Def{Name: "openstack_sync_plugin_compile_duration_seconds", Type: Histogram, Labels: []string{"plugin", "cache"},
		Buckets: loadBuckets, Help: "Time to compile a plugin module; cache is hit (read from the compilation cache) or miss."}
	LeaseStandDowns = &Def{Name: "openstack_sync_lease_standdowns_total", Type: Counter, Labels: []string{"plugin"},
		Help: "Hook runs that stood down because another replica holds the plugin's lease (high availability, docs/scaling.md)."}
	LeaseTakeovers = &Def{Name: "openstack_sync_lease_takeovers_total", Type: Counter, Labels: []string{"plugin"},
		Help: "Hook runs that took the plugin's lease from another replica or a free lease, and so reconciled every CR."}
	Replays = &Def{Name: "openstack_sync_replays_total", Type: Counter, Labels: []string{"plugin", "result"},
		Help: "Attempts to replay the last converged run (docs/operating.md): hit (every answer unchanged, the plugin not run), miss (something changed, the plugin ran)."}
	SandboxRefusals = &Def{Name: "openstack_sync_sandbox_refusals_total", Type: Counter, Labels: []string{"plugin", "kind"},
		Help: "Plugin actions the sandbox stopped, by kind: grant (an OpenStack request outside the grants), limit (time, memory or size limit), trap (panic, trap or ABI fault)."}
)

// Catalog lists every metric the host reports, for docs and tests.
var Catalog = []*Def{
	Reconciles, Deletes, Prunes, Deletions, Requests, RequestDuration, RetryWaits, Runs, RunDuration,
	RunBudgetExhausted, Unreadable, FinalizersHeld, PluginLoad, PluginCompile, SandboxRefusals,
	LeaseStandDowns, LeaseTakeovers, Replays,
}

// StatusClass is the status_class label of an HTTP status code; 0 (no answer) is "error".
func StatusClass(code int) string {
	if code < 100 || code > 599 {
		return "error"
	}
	return fmt.Sprintf("%dxx", code/100)
}

// check reports whether labels fit d; a mismatch is a host bug, so it is reported, never panics.
func check(d *Def, t Type, labels []string) error {
	if d.Type != t {
		return fmt.Errorf("metric %s is a %s, not a %s", d.Name, d.Type, t)
	}
	if len(labels) != len(d.Labels) {
		return fmt.Errorf("metric %s takes labels %s; got %d values", d.Name, strings.Join(d.Labels, ", "), len(labels))
	}
	if t == Histogram && (len(d.Buckets) == 0 || !slices.IsSorted(d.Buckets)) {
		return fmt.Errorf("histogram %s has no ascending buckets", d.Name)
	}
	return nil
}
