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
	var items *bindingctx.List
	for i := len(contexts) - 1; i >= 0 && items == nil; i-- {
		if contexts[i].HasSnapshot(claims) {
			// A claims snapshot that is not a list is as good as none.
			items, _ = bindingctx.FullSnapshot(contexts[i:i+1], claims)
		}
	}
	if items == nil {
		// shell-operator always sends the claims snapshot with the shard's; without it nothing is
		// known about the other shards, so nothing may be pruned.
		log.Error("Shard without the " + claims + " snapshot: skipping prune this run")
		plan.Unreadable = append(plan.Unreadable, "(snapshot "+claims+")")
		plan.UnreadableScopes = append(plan.UnreadableScopes, resource.Scope{})
		return nil
	}
	var spared []*resource.Resource
	err := items.Each(func(obj any) {
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
			return
		}
		if !r.Deleting {
			spared = append(spared, r)
		}
	})
	if err != nil {
		// Unknown claims could claim anything.
		log.Error(err.Error() + "; skipping prune this run")
		plan.Unreadable = append(plan.Unreadable, "(snapshot "+claims+")")
		plan.UnreadableScopes = append(plan.UnreadableScopes, resource.Scope{})
		return nil
	}
	return spared
}
