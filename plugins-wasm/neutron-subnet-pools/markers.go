package main

import (
	"fmt"
	"slices"
	"strings"

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
	// groupTag, under a profile that prunes per group, prefixes the tag recording the credential
	// group that owns the pool (compat.Group); "" under the original's, which records none.
	groupTag string
	// statusPrefixes says the profile's CRD declares status.prefixes. The original's CRD (as
	// published) does not: the API server would drop the field, the status would never be
	// current and every run would write it again (docs/contract.md Decision 2).
	statusPrefixes bool
}

// markingOf is every profile's marking: this project's, in the form of its other plugins'
// markers, and the original operator's exactly as its subnet pools plugin writes it
// (rackerlabs/understack, subnet_pools/markers.py: the config's OWNERSHIP_TAG in the pool's tags).
var markingOf = map[compat.Profile]marking{
	compat.OpenStackSync: {tag: "openstack-sync.io/managed-by=neutron-subnet-pools", groupTag: "openstack-sync.io/credential-group=",
		statusPrefixes: true},
	compat.Understack: {tag: "understack-operator-neutron-subnet-pool"},
}

// owns reports whether the pool carries the marking's tag, for whichever group.
func (m marking) owns(p *pool) bool { return slices.Contains(p.Tags, m.tag) }

// groupOf is the credential group a pool's tags record ("" for none).
func (m marking) groupOf(p *pool) string {
	if m.groupTag == "" {
		return ""
	}
	for _, t := range p.Tags {
		if g, ok := strings.CutPrefix(t, m.groupTag); ok {
			return g
		}
	}
	return ""
}

// ownership is one run's profile: its own marking, and the other profile's, whose pools it never
// takes over; and under a profile that prunes per group, the group of the request in hand.
type ownership struct {
	profile compat.Profile
	own     marking
	other   marking
	group   string
}

// inGroup is o for the credential group of a request (a no-op under a profile whose marking
// records no group).
func (o ownership) inGroup(c pdk.Credentials) (ownership, error) {
	if o.own.groupTag == "" {
		return o, nil
	}
	g, err := compat.Group(c)
	o.group = g
	return o, err
}

// groupTag is the tag recording the request's group ("" under a profile that records none).
func (o ownership) groupTag() string {
	if o.own.groupTag == "" {
		return ""
	}
	return o.own.groupTag + o.group
}

// ownsInGroup reports whether the pool is the request's group's to prune: it carries the
// profile's tag and, under a profile that records groups, the group's.
func (o ownership) ownsInGroup(p *pool) bool {
	return o.own.owns(p) && (o.own.groupTag == "" || slices.Contains(p.Tags, o.groupTag()))
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
	if p != nil && o.own.owns(p) {
		if g := o.own.groupOf(p); g != "" && g != o.group {
			return &compat.OtherGroupError{What: fmt.Sprintf("subnet pool %q (%s)", p.Name, p.ID), Group: g, Mine: o.group,
				Marker: fmt.Sprintf("tag %q", o.own.groupTag+g)}
		}
	}
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
	for _, m := range []marking{o.own, o.other} {
		for _, t := range tags {
			if m.groupTag != "" && strings.HasPrefix(t, m.groupTag) {
				return invalidspec.Errorf("spec.tags: %q records a credential group, which only the plugin writes; remove it", t)
			}
		}
	}
	return nil
}

// desiredTags are the CR's spec.tags plus the ownership tag, sorted and without repeats, as the
// original writes them. The other profile's tag already on the pool stays (foreign lets such a
// pool through only when it carries both): neither operator's prune may lose a pool it owns.
func (o ownership) desiredTags(specTags, have []string) []string {
	tags := append(slices.Clone(specTags), o.own.tag)
	if g := o.groupTag(); g != "" {
		tags = append(tags, g)
	}
	if slices.Contains(have, o.other.tag) {
		tags = append(tags, o.other.tag)
		// With the group the other profile's tag records, if it records one.
		for _, t := range have {
			if o.other.groupTag != "" && strings.HasPrefix(t, o.other.groupTag) {
				tags = append(tags, t)
			}
		}
	}
	slices.Sort(tags)
	return slices.Compact(tags)
}
