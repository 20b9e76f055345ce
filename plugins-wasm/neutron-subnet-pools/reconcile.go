package main

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

// reconcile converges one NeutronSubnetPool: resolve its CIDRs from Nautobot and check them (a
// failure writes nothing to Neutron), ensure the address scope, then create the pool or update
// what may change, and tag it as owned. The original's sync_subnet_pool, step for step.
func reconcile(ctx *pdk.Context, spec *Spec, own ownership, site string) (*pdk.Result, error) {
	if err := own.checkSpecTags(spec.Tags); err != nil {
		return nil, err
	}
	res, err := resolveSpec(ctx, spec, site)
	if err != nil {
		return nil, err
	}
	want, err := networks(res.Prefixes)
	if err != nil {
		return nil, invalidspec.Errorf("%v", err)
	}
	version := res.IPVersion
	if err := spec.validateLengths(version); err != nil {
		return nil, err
	}
	n := newNeutron(ctx)
	existing, err := n.findPool(spec)
	if err != nil {
		return nil, err
	}
	if err := own.foreign(existing); err != nil {
		return nil, err
	}
	s, err := n.ensureAddressScope(spec, version)
	if err != nil {
		return nil, err
	}
	desired := desiredAttrs(spec, res.Prefixes, s)
	if err := n.checkDefaultConflict(spec, version, existing); err != nil {
		return nil, err
	}
	var notes []string
	p := existing
	if existing == nil {
		ctx.Logf(pdk.LevelInfo, "creating subnet pool %s address_scope_id=%v prefixes=%s", spec.Name, desired["address_scope_id"],
			strings.Join(res.Prefixes, ","))
		if p, err = n.createPool(desired); err != nil {
			return nil, err
		}
	} else {
		if err := validateExisting(existing, spec, version); err != nil {
			return nil, err
		}
		updates := updateAttrs(existing, desired, want)
		have, err := networks(existing.Prefixes)
		if err != nil {
			return nil, fmt.Errorf("subnet pool %s (%s): Neutron holds an unreadable prefix: %v", spec.Name, existing.ID, err)
		}
		if removed := uncovered(have, compact(want)); len(removed) > 0 {
			// Neutron refuses a pool that shrinks; pushing it would fail every run. The rest
			// converges, the prefixes stay, and the drift is the operator's to resolve.
			notes = append(notes, fmt.Sprintf("Neutron subnet pool '%s' still holds prefixes no longer referenced in Nautobot (%s); "+
				"Neutron does not allow removing prefixes from a pool, so drain and delete the pool to remove them",
				spec.Name, strings.Join(strs(removed), ", ")))
			delete(updates, "prefixes")
		}
		if len(updates) > 0 {
			keys := make([]string, 0, len(updates))
			for k := range updates {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			ctx.Logf(pdk.LevelInfo, "updating subnet pool %s (%s) fields %s", spec.Name, existing.ID, strings.Join(keys, ","))
			if p, err = n.updatePool(existing.ID, updates); err != nil {
				return nil, err
			}
		}
	}
	tags := own.desiredTags(spec.Tags, p.Tags)
	have := slices.Clone(p.Tags)
	slices.Sort(have)
	if !slices.Equal(have, tags) {
		ctx.Logf(pdk.LevelInfo, "tagging subnet pool %s (%s) with %s", spec.Name, p.ID, strings.Join(tags, ","))
		if err := n.setTags(p.ID, tags); err != nil {
			return nil, err
		}
	}
	result := &pdk.Result{Notes: notes}
	if own.own.statusPrefixes {
		links := make([]any, 0, len(res.Links))
		for _, l := range res.Links {
			links = append(links, map[string]any{"id": l.ID, "cidr": l.CIDR, "url": l.URL})
		}
		result.ExtraStatus = map[string]any{"prefixes": links}
	}
	return result, nil
}

// desiredAttrs is the pool Neutron should hold, in its attribute names.
func desiredAttrs(spec *Spec, prefixes []string, s *scope) map[string]any {
	attrs := map[string]any{"name": spec.Name, "prefixes": prefixes, "description": spec.Description,
		"is_default": spec.IsDefault, "min_prefixlen": *spec.MinimumPrefixLength,
		"default_prefixlen": *spec.DefaultPrefixLength, "max_prefixlen": *spec.MaximumPrefixLength}
	if s != nil {
		attrs["address_scope_id"] = s.ID
	}
	if spec.ProjectID != "" {
		attrs["project_id"] = spec.ProjectID
	}
	if spec.Shared != nil {
		attrs["shared"] = *spec.Shared
	}
	return attrs
}

// updateAttrs are the desired attributes that differ from the pool's, leaving out what Neutron
// will not update (name, project, shared). Prefixes compare as Neutron stores them (compact).
func updateAttrs(p *pool, desired map[string]any, want []netip.Prefix) map[string]any {
	updates := map[string]any{}
	for k, v := range desired {
		switch k {
		case "name", "project_id", "shared":
		case "prefixes":
			have, err := networks(p.Prefixes)
			if err != nil || !slices.Equal(strs(compact(have)), strs(compact(want))) {
				updates[k] = v
			}
		case "address_scope_id":
			if p.scopeID() != v {
				updates[k] = v
			}
		case "description":
			if p.Description != v {
				updates[k] = v
			}
		case "is_default":
			if p.IsDefault != v {
				updates[k] = v
			}
		case "min_prefixlen":
			if int(p.MinPrefixLen) != v {
				updates[k] = v
			}
		case "default_prefixlen":
			if int(p.DefPrefixLen) != v {
				updates[k] = v
			}
		case "max_prefixlen":
			if int(p.MaxPrefixLen) != v {
				updates[k] = v
			}
		}
	}
	return updates
}

// validateExisting refuses a pool the CR cannot converge: another project's, a shared setting
// Neutron will not change, another IP family.
func validateExisting(p *pool, spec *Spec, version int) error {
	pyBool := map[bool]string{true: "True", false: "False"}
	if spec.ProjectID != "" && p.ProjectID != "" && p.ProjectID != spec.ProjectID {
		return invalidspec.Errorf("Subnet pool '%s' (%s) belongs to project_id='%s'; expected '%s'", spec.Name, p.ID, p.ProjectID, spec.ProjectID)
	}
	if spec.Shared != nil && p.Shared != *spec.Shared {
		return invalidspec.Errorf("Subnet pool '%s' (%s) has shared=%s; Neutron does not allow updating shared on an existing subnet pool. "+
			"Drain and delete the pool to let the operator recreate it, or set spec.shared to match.", spec.Name, p.ID, pyBool[p.Shared])
	}
	if p.IPVersion != 0 && p.IPVersion != version {
		return invalidspec.Errorf("Subnet pool '%s' (%s) is IPv%d; expected IPv%d", spec.Name, p.ID, p.IPVersion, version)
	}
	return nil
}
