package main

import (
	"fmt"
	"maps"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/canon"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
)

// markerSet is the ownership marker of one profile. A service profile is owned when its metainfo
// JSON carries owner with ownerValue; the other two keys record the marker scheme and the CR kind
// for operators. A flavor is owned when its description carries flavor (flavors have no free-form
// field).
type markerSet struct {
	owner, ownerValue     string
	version, versionValue string
	source, sourceValue   string
	flavor                string
}

// markersOf is every profile's marker (docs/migrating.md): this project's, and the original
// operator's exactly as its router flavors plugin writes it (rackerlabs/understack, markers.py).
var markersOf = map[compat.Profile]markerSet{
	compat.OpenStackSync: {
		owner: "openstack-sync.io/managed-by", ownerValue: "neutron-router-flavors",
		version: "openstack-sync.io/marker-version", versionValue: "v1",
		source: "openstack-sync.io/source", sourceValue: "NeutronRouterFlavor",
		flavor: "[openstack-sync.io/neutron-router-flavors]",
	},
	compat.Understack: {
		owner: "_understack_router_flavor_operator", ownerValue: "managed",
		version: "_understack_router_flavor_marker_version", versionValue: "v1",
		source: "_understack_router_flavor_source", sourceValue: "NeutronRouterFlavor",
		flavor: "[understack-router-flavor-operator]",
	},
}

func (m markerSet) keys() []string { return []string{m.owner, m.version, m.source} }

func (m markerSet) ownsMeta(meta map[string]any) bool { return meta[m.owner] == m.ownerValue }

func (m markerSet) ownsProfile(p profile) bool { return m.ownsMeta(p.metaInfo()) }

func (m markerSet) ownsFlavor(f flavor) bool { return strings.Contains(f.Description, m.flavor) }

// userDescription is the description without the marker.
func (m markerSet) userDescription(desc string) string {
	return strings.TrimSpace(strings.ReplaceAll(desc, m.flavor, ""))
}

// withoutMarkers is a description without any profile's marker: what status.resource shows.
func withoutMarkers(desc string) string {
	for _, m := range markersOf {
		desc = m.userDescription(desc)
	}
	return desc
}

// markedDescription is desc with the marker appended, the way the original writes it.
func (m markerSet) markedDescription(desc string) string {
	if desc == "" {
		return m.flavor
	}
	return desc + " " + m.flavor
}

// markedMetainfo renders meta plus the marker as compact JSON with sorted keys, the text
// Neutron stores (the original renders it the same way).
func (m markerSet) markedMetainfo(meta map[string]any) (string, error) {
	out := maps.Clone(meta)
	if out == nil {
		out = map[string]any{}
	}
	out[m.owner], out[m.version], out[m.source] = m.ownerValue, m.versionValue, m.sourceValue
	return canon.JSON(out)
}

// ownership is one run's view of the markers: its profile's, and the other's (compat.Ownership).
type ownership = compat.Ownership[markerSet]

func ownershipOf(p compat.Profile) ownership { return compat.OwnershipOf(p, markersOf) }

func ownershipFor(ctx *pdk.Context) (ownership, error) { return compat.OwnershipFor(ctx, markersOf) }

// foreignFlavor is the error of a flavor carrying only the other profile's marker.
func foreignFlavor(o ownership, f flavor) error {
	if o.Own.ownsFlavor(f) || !o.Other.ownsFlavor(f) {
		return nil
	}
	return &compat.ForeignError{What: fmt.Sprintf("router flavor %q (%s)", f.Name, f.ID), Profile: o.Profile.Other(),
		Marker: "description " + o.Other.flavor}
}

// foreignProfile is the error of a service profile carrying only the other profile's marker.
func foreignProfile(o ownership, p profile) error {
	return &compat.ForeignError{What: "service profile " + p.ID, Profile: o.Profile.Other(),
		Marker: fmt.Sprintf("metainfo %s=%s", o.Other.owner, o.Other.ownerValue)}
}

// markerKeys are every profile's metainfo keys: none is the user's, whichever profile runs.
func markerKeys() []string {
	var out []string
	for _, p := range []compat.Profile{compat.OpenStackSync, compat.Understack} {
		out = append(out, markersOf[p].keys()...)
	}
	return out
}
