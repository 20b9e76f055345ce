package hook

import (
	"errors"
	"log/slog"
	"slices"

	"github.com/openstack-sync/openstack-sync/host/internal/bindingctx"
	"github.com/openstack-sync/openstack-sync/host/internal/hookenv"
	"github.com/openstack-sync/openstack-sync/host/internal/planner"
	"github.com/openstack-sync/openstack-sync/host/internal/resource"
)

// spareClaims reads the claims snapshot of a sharded hook: every live CR of the kind in the
// release's reach, whatever its shard. A shard must never prune what another shard's CRs claim,
// and ownership markers name the plugin, not the shard; so every prune of this run spares their
// specs. A claim that cannot be read could claim anything: it skips the prune like an unreadable CR
// of the shard's own (docs/contract.md §3.2), and is named.
func spareClaims(contexts []bindingctx.Context, cfg hookenv.Config, plan *planner.Plan, log *slog.Logger) []*resource.Resource {
	claims := hookenv.ClaimsBinding(cfg.BindingName)
	var items []any
	found := false
	for i := len(contexts) - 1; i >= 0 && !found; i-- {
		snaps, _ := contexts[i]["snapshots"].(map[string]any)
		if _, ok := snaps[claims].([]any); ok {
			items, _ = bindingctx.FullSnapshot(contexts[i:i+1], claims)
			found = true
		}
	}
	if !found {
		// shell-operator always sends the claims snapshot with the shard's; without it nothing is
		// known about the other shards, so nothing may be pruned.
		log.Error("Shard without the " + claims + " snapshot: skipping prune this run")
		plan.Unreadable = append(plan.Unreadable, "(snapshot "+claims+")")
		plan.UnreadableScopes = append(plan.UnreadableScopes, resource.Scope{})
		return nil
	}
	var spared []*resource.Resource
	for _, obj := range items {
		r, err := resource.Parse(obj, cfg.PodNamespace)
		if err != nil {
			reason, ref := err.Error(), resource.Ref(obj)
			var re *resource.Error
			if errors.As(err, &re) {
				reason = re.Reason
			}
			log.Error("Ignoring unreadable CR of another shard "+ref+": "+reason+"; skipping prune this run", "kind", cfg.Kind, "cr", ref)
			if !slices.Contains(plan.Unreadable, ref) {
				plan.Unreadable = append(plan.Unreadable, ref)
				plan.UnreadableScopes = append(plan.UnreadableScopes, resource.ScopeOf(obj, cfg.PodNamespace))
			}
			continue
		}
		if !r.Deleting {
			spared = append(spared, r)
		}
	}
	return spared
}
