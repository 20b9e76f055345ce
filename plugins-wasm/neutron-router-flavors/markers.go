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
	// group is the metainfo key recording the credential group that owns a profile, and the word
	// recording it inside the flavor's marker ("[... group=<group>]"), under a profile that prunes
	// per group (compat.Group); "" under the original's, whose markers record none.
	group string
	// groupValue is the group of the request in hand (InGroup).
	groupValue string
}

// markersOf is every profile's marker (docs/migrating.md): this project's, and the original
// operator's exactly as its router flavors plugin writes it (rackerlabs/understack, markers.py).
var markersOf = map[compat.Profile]markerSet{
	compat.OpenStackSync: {
		owner: "openstack-sync.io/managed-by", ownerValue: "neutron-router-flavors",
		version: "openstack-sync.io/marker-version", versionValue: "v1",
		source: "openstack-sync.io/source", sourceValue: "NeutronRouterFlavor",
		flavor: "[openstack-sync.io/neutron-router-flavors]",
		group:  "openstack-sync.io/credential-group",
	},
	compat.Understack: {
		owner: "_understack_router_flavor_operator", ownerValue: "managed",
		version: "_understack_router_flavor_marker_version", versionValue: "v1",
		source: "_understack_router_flavor_source", sourceValue: "NeutronRouterFlavor",
		flavor: "[understack-router-flavor-operator]",
	},
}

func (m markerSet) keys() []string {
	if m.group == "" {
		return []string{m.owner, m.version, m.source}
	}
	return []string{m.owner, m.version, m.source, m.group}
}

// InGroup is m for the credential group of the request in hand (a no-op under a profile whose
// markers record no group).
func (m markerSet) InGroup(c pdk.Credentials) (markerSet, error) {
	if m.group == "" {
		return m, nil
	}
	g, err := compat.Group(c)
	m.groupValue = g
	return m, err
}

// markedMeta reports whether a profile's metainfo carries the marker, for whichever group.
func (m markerSet) markedMeta(meta map[string]any) bool { return meta[m.owner] == m.ownerValue }

// metaGroup is the group a marked metainfo records ("" for none).
func (m markerSet) metaGroup(meta map[string]any) string {
	if m.group == "" {
		return ""
	}
	g, _ := meta[m.group].(string)
	return g
}

// ownsMeta reports whether a profile is the request's group's: marked for it, or marked before
// markers recorded groups. Neutron refuses to update a profile bound to a flavor, so a bound
// profile keeps the marker it was given; it is deleted only once bound to no flavor at all, which
// no group's CR can then be relying on.
func (m markerSet) ownsMeta(meta map[string]any) bool {
	if !m.markedMeta(meta) {
		return false
	}
	g := m.metaGroup(meta)
	return g == "" || g == m.groupValue
}

func (m markerSet) ownsProfile(p profile) bool { return m.ownsMeta(p.metaInfo()) }

// flavorMarker is the marker a flavor's description carries: with the request's group under a
// profile that records one.
func (m markerSet) flavorMarker() string {
	if m.group == "" || m.groupValue == "" {
		return m.flavor
	}
	return m.flavorGroupPrefix() + m.groupValue + "]"
}

// flavorGroupPrefix opens the marker of a flavor that records its group.
func (m markerSet) flavorGroupPrefix() string {
	return strings.TrimSuffix(m.flavor, "]") + " " + "group="
}

// flavorGroup is the group a flavor's marker records, and whether it carries the marker at all
// (for whichever group, or none).
func (m markerSet) flavorGroup(desc string) (string, bool) {
	if m.group != "" {
		if _, rest, ok := strings.Cut(desc, m.flavorGroupPrefix()); ok {
			if g, _, ok := strings.Cut(rest, "]"); ok {
				return g, true
			}
		}
	}
	return "", strings.Contains(desc, m.flavor)
}

// flavorMarked reports whether the flavor carries the profile's marker, for whichever group.
func (m markerSet) flavorMarked(f flavor) bool {
	_, marked := m.flavorGroup(f.Description)
	return marked
}

// markedProfile reports whether the profile carries the profile's marker, for whichever group.
func (m markerSet) markedProfile(p profile) bool { return m.markedMeta(p.metaInfo()) }

// ownsFlavor reports whether the flavor is the request's group's: only such a flavor is pruned.
func (m markerSet) ownsFlavor(f flavor) bool {
	return strings.Contains(f.Description, m.flavorMarker())
}

// userDescription is the description without the marker, whichever group it records.
func (m markerSet) userDescription(desc string) string {
	desc = strings.ReplaceAll(desc, m.flavor, "")
	for m.group != "" {
		before, rest, ok := strings.Cut(desc, m.flavorGroupPrefix())
		if !ok {
			break
		}
		_, after, ok := strings.Cut(rest, "]")
		if !ok {
			break
		}
		desc = before + after
	}
	return strings.TrimSpace(desc)
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
		return m.flavorMarker()
	}
	return desc + " " + m.flavorMarker()
}

// markedMetainfo renders meta plus the marker as compact JSON with sorted keys, the text
// Neutron stores (the original renders it the same way).
func (m markerSet) markedMetainfo(meta map[string]any) (string, error) {
	out := maps.Clone(meta)
	if out == nil {
		out = map[string]any{}
	}
	out[m.owner], out[m.version], out[m.source] = m.ownerValue, m.versionValue, m.sourceValue
	if m.group != "" && m.groupValue != "" {
		out[m.group] = m.groupValue
	}
	return canon.JSON(out)
}

// ownership is one run's view of the markers: its profile's, and the other's (compat.Ownership).
type ownership = compat.Ownership[markerSet]

func ownershipOf(p compat.Profile) ownership { return compat.OwnershipOf(p, markersOf) }

// groupOwnership is the hook's profile's view for the credential group of a request.
func groupOwnership(ctx *pdk.Context, c pdk.Credentials) (ownership, error) {
	return compat.OwnershipForGroup(ctx, markersOf, c)
}

// foreignFlavor is the error of a flavor carrying only the other profile's marker, or this
// profile's for another credential group.
func foreignFlavor(o ownership, f flavor) error {
	if g, marked := o.Own.flavorGroup(f.Description); marked {
		if g != "" && g != o.Own.groupValue {
			return &compat.OtherGroupError{What: fmt.Sprintf("router flavor %q (%s)", f.Name, f.ID), Group: g, Mine: o.Own.groupValue,
				Marker: "description " + o.Own.flavorGroupPrefix() + g + "]"}
		}
		return nil
	}
	if _, theirs := o.Other.flavorGroup(f.Description); !theirs {
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

// allMarkerKeys is markerKeys, made once: the checks of every CR read it.
var allMarkerKeys = markerKeys()

// markerKeys are every profile's metainfo keys: none is the user's, whichever profile runs.
func markerKeys() []string {
	var out []string
	for _, p := range []compat.Profile{compat.OpenStackSync, compat.Understack} {
		out = append(out, markersOf[p].keys()...)
	}
	return out
}
