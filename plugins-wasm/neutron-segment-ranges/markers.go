package main

import (
	"fmt"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
)

// naming is how one profile marks the ranges it owns. A segment range has no free-form field, so
// a marker can only be part of its name.
type naming struct {
	// prefix is prepended to spec.name in Neutron; "" means no marker: a range is a CR's by its
	// exact name and the plugin never deletes one.
	prefix string
}

// namingOf is every profile's naming (docs/migrating.md): this project's, and the original
// operator's exactly as its segment ranges plugin writes it (rackerlabs/understack, markers.py).
var namingOf = map[compat.Profile]naming{
	compat.OpenStackSync: {},
	compat.Understack:    {prefix: "understack-sr:"},
}

// neutronName is the range's name in Neutron for the CR's spec.name.
func (n naming) neutronName(logical string) string {
	if n.prefix == "" || strings.HasPrefix(logical, n.prefix) {
		return logical
	}
	return n.prefix + logical
}

// logicalName is spec.name for a range's name in Neutron.
func (n naming) logicalName(name string) string { return strings.TrimPrefix(name, n.prefix) }

// owns reports whether the range carries the profile's marker; without one nothing is owned.
func (n naming) owns(r segmentRange) bool {
	return n.prefix != "" && strings.HasPrefix(r.Name, n.prefix)
}

// ownership is one run's view of the names: its profile's, and the other's (compat.Ownership).
type ownership = compat.Ownership[naming]

func ownershipOf(p compat.Profile) ownership { return compat.OwnershipOf(p, namingOf) }

func ownershipFor(ctx *pdk.Context) (ownership, error) { return compat.OwnershipFor(ctx, namingOf) }

// foreign is the error of a spec whose range exists only under the other profile's name: creating
// one under this profile's name would make a second range over the same segmentation ids.
func foreign(o ownership, idx *index, s Spec) error {
	if o.Other.prefix == "" {
		return nil
	}
	theirs := s
	theirs.Name = o.Other.neutronName(o.Own.logicalName(s.Name))
	if matches := idx.find(theirs); len(matches) > 0 {
		return &compat.ForeignError{What: fmt.Sprintf("segment range %q (%s)", matches[0].Name, matches[0].ID), Profile: o.Profile.Other(),
			Marker: fmt.Sprintf("name prefix %q", o.Other.prefix)}
	}
	return nil
}
