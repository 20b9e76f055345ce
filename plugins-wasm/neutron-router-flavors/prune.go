package main

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
)

// pruneMode is what PRUNE asks of the plugin.
type pruneMode int

const (
	// sweepOnly (PRUNE=false, BEST_EFFORT_PRUNE): delete owned profiles bound to no flavor, never a
	// flavor, and never fail for a profile Neutron keeps.
	sweepOnly pruneMode = iota
	// full (PRUNE=true, FINALIZED_PRUNE): also delete owned flavors no CR names, and fail when
	// anything owned could not be deleted so the finalizer is kept.
	full
)

// pruner carries one prune's bookkeeping.
type pruner struct {
	svc      *pdk.ServiceClient
	log      logf
	bindings map[string]int // profile id -> number of flavors it is bound to
	kept     []string       // flavors still present
	keptProf []string       // profiles still present
	// routers counts routers per flavor id; nil until the first candidate flavor needs it.
	// Neutron does not filter routers by flavor_id (400), so one list serves every flavor.
	routers    map[string]int
	routersErr error
}

// routerFlavor is the part of a router prune reads.
type routerFlavor struct {
	ID       string  `json:"id"`
	FlavorID *string `json:"flavor_id"`
}

func (pr *pruner) routersUsing(flavorID string) (int, error) {
	if pr.routers == nil && pr.routersErr == nil {
		routers, err := pdk.ListNeutron(pr.svc, routersPath, "routers", url.Values{"fields": {"id", "flavor_id"}},
			func(r *routerFlavor) string { return r.ID })
		if err != nil {
			pr.routersErr = fmt.Errorf("list routers: %w", err)
			return 0, pr.routersErr
		}
		pr.routers = map[string]int{}
		for _, r := range routers {
			if r.FlavorID != nil {
				pr.routers[*r.FlavorID]++
			}
		}
	}
	return pr.routers[flavorID], pr.routersErr
}

// prune deletes what no desired spec claims. Flavors are only deleted in full mode, only with the
// marker, only when no router uses them; a profile is only deleted when owned and bound to no
// flavor at all (of any service type).
func prune(svc *pdk.ServiceClient, own markerSet, desired []Spec, authoritativeEmpty bool, mode pruneMode, log logf) error {
	if mode == full && len(desired) == 0 && !authoritativeEmpty {
		log("skipping router flavor prune: no desired router flavors and the empty set is not authoritative")
		return nil
	}
	want := map[string]bool{}
	for _, s := range desired {
		want[s.Name] = true
	}
	flavors, err := listFlavors(svc)
	if err != nil {
		return err
	}
	pr := &pruner{svc: svc, log: log, bindings: map[string]int{}}
	for _, f := range flavors {
		for _, id := range f.ServiceProfiles {
			pr.bindings[id]++
		}
	}
	profiles, err := listProfiles(svc)
	if err != nil {
		return err
	}
	owned := map[string]bool{}
	for _, p := range profiles {
		if own.ownsProfile(p) {
			owned[p.ID] = true
		}
	}
	if mode == full {
		for _, f := range flavors {
			if f.ServiceType != l3Service || f.Name == "" || want[f.Name] {
				continue
			}
			if !own.ownsFlavor(f) {
				switch g, marked := own.flavorGroup(f.Description); {
				case !marked:
					log("keeping router flavor %s: no NeutronRouterFlavor claims it but it lacks the %s marker", f.Name, own.flavor)
				case g == "" && own.group != "":
					log("keeping router flavor %s: no NeutronRouterFlavor of this group claims it, but its marker records no "+
						"credential group (written before markers did), so it may be another group's; the NeutronRouterFlavor "+
						"naming it records its group when it reconciles, and one no CR names is left for an operator to delete", f.Name)
				}
				// Another group's: its own prune decides.
				continue
			}
			if !pr.deleteFlavor(f) {
				continue
			}
			for _, id := range f.ServiceProfiles {
				pr.bindings[id]--
				if pr.bindings[id] <= 0 && owned[id] {
					pr.deleteProfile(id)
					delete(owned, id)
				}
			}
		}
	}
	for _, p := range profiles {
		if owned[p.ID] && pr.bindings[p.ID] <= 0 {
			pr.deleteProfile(p.ID)
		}
	}
	if mode != full {
		for _, id := range pr.keptProf {
			log("service profile %s is owned and unbound but Neutron kept it; the next prune retries", id)
		}
		return nil
	}
	var msgs []string
	if len(pr.kept) > 0 {
		msgs = append(msgs, "router flavors still present: "+strings.Join(pr.kept, ", "))
	}
	if len(pr.keptProf) > 0 {
		msgs = append(msgs, "service profiles still present: "+strings.Join(pr.keptProf, ", "))
	}
	if len(msgs) > 0 {
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

// deleteFlavor deletes an owned flavor no router uses and reports whether it is gone.
func (pr *pruner) deleteFlavor(f flavor) bool {
	using, err := pr.routersUsing(f.ID)
	switch {
	case err != nil:
		pr.log("keeping router flavor %s: cannot tell whether routers use it: %v", f.Name, err)
		pr.kept = append(pr.kept, fmt.Sprintf("%s (router check failed)", f.Name))
		return false
	case using > 0:
		pr.log("keeping router flavor %s: %d router(s) use it", f.Name, using)
		pr.kept = append(pr.kept, fmt.Sprintf("%s (in use by %d router(s))", f.Name, using))
		return false
	}
	err = pr.svc.Call("DELETE", flavorsPath+"/"+url.PathEscape(f.ID), nil, nil, nil)
	switch {
	case err == nil, pdk.IsNotFound(err):
		pr.log("deleted router flavor %s: no NeutronRouterFlavor claims it", f.Name)
		return true
	case pdk.IsConflict(err):
		pr.log("keeping router flavor %s: %v", f.Name, err)
		pr.kept = append(pr.kept, fmt.Sprintf("%s (in use)", f.Name))
	default:
		pr.log("keeping router flavor %s: %v", f.Name, err)
		pr.kept = append(pr.kept, fmt.Sprintf("%s (%v)", f.Name, err))
	}
	return false
}

func (pr *pruner) deleteProfile(id string) {
	if slices.Contains(pr.keptProf, id) {
		return
	}
	err := pr.svc.Call("DELETE", profilesPath+"/"+url.PathEscape(id), nil, nil, nil)
	switch {
	case err == nil, pdk.IsNotFound(err):
		pr.log("deleted service profile %s: owned and bound to no flavor", id)
	default:
		pr.log("keeping service profile %s: %v", id, err)
		pr.keptProf = append(pr.keptProf, id)
	}
}
