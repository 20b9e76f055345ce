package runner

import (
	"context"
	"encoding/json"
	"log/slog"

	"github.com/openstack-sync/openstack-sync/host/internal/planner"
	"github.com/openstack-sync/openstack-sync/host/internal/plugin"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

// failureScope says whose prune a run's failures stop (docs/contract.md §7.1).
//
// A prune may delete what no desired spec claims, so it must not run while a CR it could spare
// failed or could not be read: that CR's claim is unknown. A plugin whose prune spans every group
// (ownership records no credential) lets any CR of any group claim any resource, so every failure
// is global. A plugin that declares Metadata.PrunePerGroup owns each resource from exactly one
// group, so only a failure in the group being pruned can hide a claim on what that prune deletes:
// a failed CR stops its own group (a terminally failed one none: its spec is read and desired), an unreadable CR stops the group its
// credentials name, else every group of its namespace (a CR's group is always in its own
// namespace), else - when not even the namespace can be read - every group.
//
// The global rule is Run's: without PrunePerGroup, any failure skips every prune before prune is
// reached. failureScope is the per-group rule.
type failureScope struct {
	// failed counts, per group, the CRs that failed to reconcile (not terminally), including a
	// failed finalizer write before reconciling.
	failed     map[plugin.Credentials]int
	unreadable []resource.Scope
}

// newFailureScope starts with the plan's unreadable CRs; one whose scope the plan does not say
// stops every group.
func newFailureScope(plan planner.Plan) *failureScope {
	f := &failureScope{failed: map[plugin.Credentials]int{}}
	for i := range plan.Unreadable {
		var s resource.Scope
		if i < len(plan.UnreadableScopes) {
			s = plan.UnreadableScopes[i]
		}
		f.unreadable = append(f.unreadable, s)
	}
	return f
}

// fail records n failed CRs of group c.
func (f *failureScope) fail(c plugin.Credentials, n int) {
	if n > 0 {
		f.failed[c] += n
	}
}

// any reports whether anything failed or could not be read.
func (f *failureScope) any() bool { return len(f.failed) > 0 || len(f.unreadable) > 0 }

// stops returns how many failed and unreadable CRs stop group c's prune, for a plugin that prunes
// per group.
func (f *failureScope) stops(c plugin.Credentials) (failed, unreadable int) {
	for _, s := range f.unreadable {
		if s.Covers(c) {
			unreadable++
		}
	}
	return f.failed[c], unreadable
}

// skipPrune logs why group c's prune is skipped and reports whether it is.
func (rn *Runner) skipPrune(ctx context.Context, log *slog.Logger, f *failureScope, c plugin.Credentials) bool {
	failed, unreadable := f.stops(c)
	if failed == 0 && unreadable == 0 {
		return false
	}
	log.ErrorContext(ctx, MsgSkippingGroupPrune, "failed", failed, "unreadable", unreadable)
	return true
}

// logUnreadableScopes names, for a plugin that prunes per group, which prunes each unreadable CR
// stops.
func (rn *Runner) logUnreadableScopes(ctx context.Context, plan planner.Plan) {
	if !rn.meta.PrunePerGroup {
		return
	}
	f := newFailureScope(plan)
	for i, ref := range plan.Unreadable {
		rn.Log.InfoContext(ctx, MsgUnreadableStopsPrune, "kind", rn.Config.Kind, "cr", ref, "stops", f.unreadable[i].String())
	}
}

// pruneSpecs are the desired specs group c's prune must spare: its own group's with
// Metadata.PrunePerGroup (bounded by the group, not by the cluster), else every group's.
func (rn *Runner) pruneSpecs(plan planner.Plan, desired map[plugin.Credentials][]*resource.Resource, c plugin.Credentials) []json.RawMessage {
	crs := plan.Desired
	if rn.meta.PrunePerGroup {
		crs = desired[c]
	}
	specs := make([]json.RawMessage, 0, len(crs))
	add := func(cr *resource.Resource) {
		spec := cr.Spec
		if len(rn.meta.PruneKeys) > 0 {
			var err error
			if spec, err = resource.WithKeys(spec, rn.meta.PruneKeys); err != nil {
				// Parse wrote the spec from an object; a spec that does not read back goes whole.
				spec = cr.Spec
			}
		}
		specs = append(specs, spec)
	}
	for _, cr := range crs {
		add(cr)
	}
	for _, cr := range rn.Spared {
		if !rn.meta.PrunePerGroup || cr.Credentials == c {
			add(cr)
		}
	}
	return specs
}
