package runner

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/openstack-sync/openstack-sync/host/internal/kubeapi"
	"github.com/openstack-sync/openstack-sync/host/internal/metrics"
	"github.com/openstack-sync/openstack-sync/host/internal/planner"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
	"github.com/openstack-sync/openstack-sync/host/internal/status"
)

// EventRecorder records Kubernetes Events about CRs; recording is best effort and never fails a run.
type EventRecorder interface {
	Record(ctx context.Context, ev kubeapi.Event)
}

// Event reasons the host records on a CR (docs/operating.md, "Events").
const (
	EventReconcileFailed = "ReconcileFailed"
	EventRecovered       = "Recovered"
	EventNoteReported    = "NeedsManualAction"
	EventSandboxRefused  = "SandboxRefused"
	EventPruned          = "Pruned"
	EventDeleted         = "Deleted"
	EventFinalizerKept   = "FinalizerKept"
	// EventForeignFinalizer: a deleted CR keeps the finalizer of another profile's operator.
	EventForeignFinalizer = "FinalizerOfAnotherProfile"
)

// Event actions.
const (
	actionReconcile = "Reconcile"
	actionPrune     = "Prune"
	actionDelete    = "Delete"
)

func (rn *Runner) pluginName() string {
	if rn.meta.Name != "" {
		return rn.meta.Name
	}
	return rn.Config.Prefix
}

func (rn *Runner) event(ctx context.Context, cr *resource.Resource, typ, reason, action, note string) {
	if rn.Events == nil || cr.Name == "" {
		return
	}
	t, err := rn.target(cr)
	if err != nil {
		return
	}
	rn.Events.Record(ctx, kubeapi.Event{
		Regarding: kubeapi.ObjectRef{APIVersion: cr.APIVersion, Kind: cmp.Or(cr.Kind, rn.Config.Kind),
			Namespace: t.Namespace, Name: cr.Name, UID: cr.UID},
		Type: typ, Reason: reason, Action: action, Note: note,
	})
}

// statusEvents tells the story of a status change the run just wrote: a CR that turned Failed, or
// one that recovered. A run that rewrote nothing records nothing.
func (rn *Runner) statusEvents(ctx context.Context, cr *resource.Resource, o status.Outcome) {
	was, _ := cr.Status()["syncStatus"].(string)
	progressing := o.Lifecycle != nil && o.Lifecycle.Reason == status.ReasonProgressing
	switch {
	case !o.Synced && !progressing && was != status.Failed:
		rn.event(ctx, cr, kubeapi.EventWarning, EventReconcileFailed, actionReconcile, o.Message)
	case o.Synced && was == status.Failed:
		rn.event(ctx, cr, kubeapi.EventNormal, EventRecovered, actionReconcile, o.Message)
	}
}

// noteEvent records the notes of a converged CR whose status just changed: drift OpenStack will
// not let the plugin fix, which needs a human.
func (rn *Runner) noteEvent(ctx context.Context, cr *resource.Resource, o status.Outcome, notes []string) {
	if o.Synced && len(notes) > 0 {
		rn.event(ctx, cr, kubeapi.EventWarning, EventNoteReported, actionReconcile, strings.Join(notes, "; "))
	}
}

// sandboxEvent records a plugin call the sandbox stopped (a refused grant, a limit, a trap).
func (rn *Runner) sandboxEvent(ctx context.Context, cr *resource.Resource, action string, err error) {
	if kind := plugin.SandboxRefusal(err); kind != "" {
		rn.event(ctx, cr, kubeapi.EventWarning, EventSandboxRefused, action,
			fmt.Sprintf("The plugin's sandbox stopped it (%s): %s", kind, status.Text(err.Error())))
	}
}

// observeReconcile counts one reconcile by its result; a CR that failed before the plugin saw it
// (connection, readiness, finalizer) counts as failed too.
func (rn *Runner) observeReconcile(failures, terminal int, l *plugin.Lifecycle) {
	result := "synced"
	switch {
	case terminal > 0:
		result = "terminal"
	case failures > 0:
		result = "failed"
	case l != nil && l.Reason == plugin.ReasonProgressing:
		result = "progressing"
	}
	metrics.Add(rn.Metrics, metrics.Reconciles, 1, rn.pluginName(), result)
}

func (rn *Runner) observePrune(result string) {
	metrics.Add(rn.Metrics, metrics.Prunes, 1, rn.pluginName(), result)
}

// deletionCounter is the session a prune or a per-CR delete runs with: it counts the OpenStack
// resources actually deleted (DELETE answered 2xx), by service, for the metric and the Events.
type deletionCounter struct {
	plugin.Session
	rn *Runner

	mu      sync.Mutex
	deleted map[string]int
}

// countDeletions wraps s when the run is observed; a run without metrics and Events hands the
// plugin its session as it is.
func (rn *Runner) countDeletions(s plugin.Session) *deletionCounter {
	d := &deletionCounter{Session: s, rn: rn, deleted: map[string]int{}}
	if rn.Metrics == nil && rn.Events == nil {
		d.rn = nil
	}
	return d
}

// session is what the plugin is given: the counter, or the plain session when nothing observes.
// A session that reaches sources still does through the counter (keepSources).
func (d *deletionCounter) session() plugin.Session {
	if d.rn == nil {
		return d.Session
	}
	return keepSources(d, d.Session)
}

// keepSources is w, a wrapper of s, reaching s's sources when s reaches any: a wrapper that
// counts or observes requests must not cut a plugin off from its source of truth. Source
// requests delete nothing in OpenStack, so they pass uncounted.
func keepSources(w, s plugin.Session) plugin.Session {
	if src, ok := s.(plugin.SourceSender); ok {
		return sourced{Session: w, src: src}
	}
	return w
}

type sourced struct {
	plugin.Session
	src plugin.SourceSender
}

// Unwrap is the session w wraps, for test doubles that identify sessions.
func (s sourced) Unwrap() plugin.Session { return s.Session }

func (s sourced) DoSource(ctx context.Context, req plugin.SourceRequest) (*plugin.Response, error) {
	return s.src.DoSource(ctx, req)
}

func (d *deletionCounter) Do(ctx context.Context, req plugin.Request) (*plugin.Response, error) {
	resp, err := d.Session.Do(ctx, req)
	if err == nil && resp != nil && req.Method == http.MethodDelete && resp.StatusCode/100 == 2 {
		d.mu.Lock()
		d.deleted[req.Service]++
		d.mu.Unlock()
		metrics.Add(d.rn.Metrics, metrics.Deletions, 1, d.rn.pluginName(), req.Service)
	}
	return resp, err
}

// Unwrap is the session the counter wraps, for test doubles that identify sessions.
func (d *deletionCounter) Unwrap() plugin.Session { return d.Session }

// summary is "2 network" style text of what was deleted; "" when nothing was.
func (d *deletionCounter) summary() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var parts []string
	for svc, n := range d.deleted {
		parts = append(parts, fmt.Sprintf("%d in %s", n, svc))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// pruneEvents records on each deleted CR of a pruned group what its prune deleted. A prune that
// deleted nothing says nothing: the run that sees a CR's Deleted event after its finalizer went
// prunes again and would otherwise tell the story twice.
func (rn *Runner) pruneEvents(ctx context.Context, crs []*resource.Resource, d *deletionCounter) {
	s := d.summary()
	if s == "" {
		return
	}
	for _, cr := range crs {
		rn.event(ctx, cr, kubeapi.EventNormal, EventPruned, actionPrune,
			"Prune deleted the owned OpenStack resources no CR claims: "+s+"; releasing the finalizer")
	}
}

// heldEvent records that a deleted CR keeps its finalizer, and why.
func (rn *Runner) heldEvent(ctx context.Context, cr *resource.Resource, action, why string) {
	rn.event(ctx, cr, kubeapi.EventWarning, EventFinalizerKept, action, "Keeping the finalizer: "+why)
}

// observeHeld sets how many deleted CRs this run left holding their finalizer.
func (rn *Runner) observeHeld(n int) {
	metrics.Set(rn.Metrics, metrics.FinalizersHeld, float64(n), rn.pluginName())
}

// observeDelete counts one per-CR delete by its result and records its Event.
func (rn *Runner) observeDelete(ctx context.Context, cr *resource.Resource, l *plugin.Lifecycle, err error) {
	result := "failed"
	switch {
	case err != nil:
		rn.sandboxEvent(ctx, cr, actionDelete, err)
		rn.heldEvent(ctx, cr, actionDelete, "the delete failed: "+status.Text(err.Error()))
	case l == nil:
		rn.heldEvent(ctx, cr, actionDelete, "the plugin reported no outcome")
	case l.Reason == plugin.ReasonSuccess:
		result = "deleted"
		rn.event(ctx, cr, kubeapi.EventNormal, EventDeleted, actionDelete, "Deleted the OpenStack resource; releasing the finalizer")
	case l.Reason == plugin.ReasonProgressing:
		result = "progressing"
	case l.Terminal():
		result = "terminal"
		rn.heldEvent(ctx, cr, actionDelete, status.Text(l.Message))
	default:
		rn.heldEvent(ctx, cr, actionDelete, status.Text(l.Message))
	}
	metrics.Add(rn.Metrics, metrics.Deletes, 1, rn.pluginName(), result)
}

// heldCount is how many deleted CRs holding the finalizer fin are not among the released.
func heldCount(deleted, released []*resource.Resource, fin string) int {
	n := 0
	for _, cr := range deleted {
		if cr.HasFinalizer(fin) && !slices.Contains(released, cr) {
			n++
		}
	}
	return n
}

// observeSkippedPrunes counts the prunes a failed run skips.
func (rn *Runner) observeSkippedPrunes(policy plugin.CleanupPolicy, plan planner.Plan) {
	if policy.RunsPrune() && !(rn.meta.HasDelete && !rn.meta.HasPrune) && !plan.Progress {
		for range plan.PruneCredentials {
			rn.observePrune("skipped")
		}
	}
}

// holdAll records that every deleted CR holding the finalizer keeps it, and why.
func (rn *Runner) holdAll(ctx context.Context, deleted []*resource.Resource, why string) {
	held := 0
	for _, cr := range deleted {
		if cr.HasFinalizer(rn.finalizer()) {
			held++
			rn.heldEvent(ctx, cr, actionPrune, why)
		}
	}
	rn.observeHeld(held)
}

// crDeletes counts the DELETE requests OpenStack accepted during one CR's delete, so the log can
// say when there was nothing to delete.
type crDeletes struct {
	plugin.Session
	mu sync.Mutex
	n  int
}

func (c *crDeletes) Do(ctx context.Context, req plugin.Request) (*plugin.Response, error) {
	resp, err := c.Session.Do(ctx, req)
	if err == nil && resp != nil && req.Method == http.MethodDelete && resp.StatusCode/100 == 2 {
		c.mu.Lock()
		c.n++
		c.mu.Unlock()
	}
	return resp, err
}

func (c *crDeletes) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Unwrap is the session it wraps, for test doubles that identify sessions.
func (c *crDeletes) Unwrap() plugin.Session { return c.Session }
