package main

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
)

// pruneOutcome says what a prune did, for the caller to log.
type pruneOutcome struct {
	Deleted []string
	// Ungrouped are pools no CR of the group claims that carry the ownership tag but no group's:
	// never deleted by a per-group prune, they may be another group's.
	Ungrouped []string
}

// prune deletes the owned subnet pools no desired name claims. The names come from the specs
// alone, with no Nautobot call, so a Nautobot outage can never make a live CR's pool look
// undesired. A pool Neutron will not delete (it has subnets: SubnetPoolDeleteError, or a 409) is
// an incomplete prune: the error keeps the deleted CR's finalizer and the next run retries.
//
// Under a profile that prunes per group, only the pools tagged with the request's group are its
// to delete: another group's are left to that group's prune, and one tagged before tags recorded
// groups is reported, never deleted.
func prune(c *pdk.ServiceClient, names []string, authoritativeEmpty bool, own ownership) (pruneOutcome, error) {
	marker := own.own.tag
	var out pruneOutcome
	if len(names) == 0 && !authoritativeEmpty {
		return out, nil
	}
	pools, err := pdk.ListNeutron(c, poolsPath, "subnetpools", url.Values{"tags": {marker}}, func(p *pool) string { return p.ID })
	if err != nil {
		return out, fmt.Errorf("list subnet pools: %w", err)
	}
	var kept, failed []string
	for _, p := range pools {
		if p.Name == "" || slices.Contains(names, p.Name) || !slices.Contains(p.Tags, marker) {
			continue
		}
		if !own.ownsInGroup(&p) {
			if own.own.groupOf(&p) == "" {
				out.Ungrouped = append(out.Ungrouped, p.Name)
			}
			continue
		}
		err := c.Delete(poolsPath+"/"+url.PathEscape(p.ID), nil, nil)
		switch {
		case err == nil, pdk.IsNotFound(err):
			out.Deleted = append(out.Deleted, p.Name)
		case pdk.IsConflict(err), inUse(err):
			kept = append(kept, p.Name)
		default:
			failed = append(failed, fmt.Sprintf("%s: %s", p.Name, err))
		}
	}
	var msgs []string
	if len(kept) > 0 {
		msgs = append(msgs, "subnet pools still present: "+strings.Join(kept, ", "))
	}
	if len(failed) > 0 {
		msgs = append(msgs, "subnet pools not deleted: "+strings.Join(failed, ", "))
	}
	if len(msgs) > 0 {
		return out, fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return out, nil
}

// inUse reports Neutron refusing to delete a pool that has allocations: a 400
// SubnetPoolDeleteError, not the 409 the original expected.
func inUse(err error) bool {
	var he *pdk.HTTPError
	return pdk.StatusCode(err) == pdk.StatusBadRequest && errors.As(err, &he) && strings.Contains(string(he.Body), "SubnetPoolDeleteError")
}
