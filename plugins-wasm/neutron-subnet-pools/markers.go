package main

import (
	"fmt"
	"slices"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/invalidspec"
)

// marking is how one profile marks the subnet pools it owns, and what else it writes that
// differs between profiles (docs/migrating.md).
type marking struct {
	// tag is the Neutron tag of an owned pool: prune deletes only pools carrying it, and
	// reconcile adds it to the pool a CR manages.
	tag string
	// statusPrefixes says the profile's CRD declares status.prefixes. The original's CRD (as
	// published) does not: the API server would drop the field, the status would never be
	// current and every run would write it again (docs/contract.md Decision 2).
	statusPrefixes bool
}

// markingOf is every profile's marking: this project's, in the form of its other plugins'
// markers, and the original operator's exactly as its subnet pools plugin writes it
// (rackerlabs/understack, subnet_pools/markers.py: the config's OWNERSHIP_TAG in the pool's tags).
var markingOf = map[compat.Profile]marking{
	compat.OpenStackSync: {tag: "openstack-sync.io/managed-by=neutron-subnet-pools", statusPrefixes: true},
	compat.Understack:    {tag: "understack-operator-neutron-subnet-pool"},
}

// owns reports whether the pool carries the marking's tag.
func (m marking) owns(p *pool) bool { return slices.Contains(p.Tags, m.tag) }

// ownership is one run's profile: its own marking, and the other profile's, whose pools it never
// takes over.
type ownership struct {
	profile compat.Profile
	own     marking
	other   marking
}

func ownershipOf(p compat.Profile) ownership {
	return ownership{profile: p, own: markingOf[p], other: markingOf[p.Other()]}
}

func ownershipFor(ctx *pdk.Context) (ownership, error) {
	p, err := compat.Of(ctx)
	if err != nil {
		return ownership{}, err
	}
	return ownershipOf(p), nil
}

// foreign is the error of a CR whose pool carries only the other profile's tag: re-tagging it
// would hand a pool the other operator (or a move under way) still prunes by its tag to this one.
// A pool carrying both tags is owned by both, and reconciled.
func (o ownership) foreign(p *pool) error {
	if p == nil || o.own.owns(p) || !o.other.owns(p) {
		return nil
	}
	return &compat.ForeignError{What: fmt.Sprintf("subnet pool %q (%s)", p.Name, p.ID), Profile: o.profile.Other(),
		Marker: fmt.Sprintf("tag %q", o.other.tag)}
}

// checkSpecTags refuses spec.tags holding the other profile's tag: the CR would hand its pool to
// the other operator's prune as well. (This profile's own tag there changes nothing.)
func (o ownership) checkSpecTags(tags []string) error {
	if slices.Contains(tags, o.other.tag) {
		return invalidspec.Errorf("spec.tags: %q is the ownership tag of the %s profile; remove it", o.other.tag, o.profile.Other())
	}
	return nil
}

// desiredTags are the CR's spec.tags plus the ownership tag, sorted and without repeats, as the
// original writes them. The other profile's tag already on the pool stays (foreign lets such a
// pool through only when it carries both): neither operator's prune may lose a pool it owns.
func (o ownership) desiredTags(specTags, have []string) []string {
	tags := append(slices.Clone(specTags), o.own.tag)
	if slices.Contains(have, o.other.tag) {
		tags = append(tags, o.other.tag)
	}
	slices.Sort(tags)
	return slices.Compact(tags)
}
