package main

import (
	"fmt"
	"maps"

	"github.com/openstack-sync/openstack-sync/pdk"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
)

// markerSet is the ownership marker of one profile: three keys in the runbook's extra. The first
// decides ownership; the others say which marker scheme and which CR kind wrote it, for operators
// reading Ironic.
type markerSet struct {
	owner, ownerValue     string
	version, versionValue string
	source, sourceValue   string
}

// markersOf is every profile's marker (docs/migrating.md): this project's, and the original
// operator's exactly as its ironic runbooks plugin writes it (rackerlabs/understack, markers.py).
var markersOf = map[compat.Profile]markerSet{
	compat.OpenStackSync: {
		owner: "openstack-sync.io/managed-by", ownerValue: "ironic-runbooks",
		version: "openstack-sync.io/marker-version", versionValue: "v1",
		source: "openstack-sync.io/source", sourceValue: "IronicRunbook",
	},
	compat.Understack: {
		owner: "_understack_runbook_operator", ownerValue: "managed",
		version: "_understack_runbook_marker_version", versionValue: "v1",
		source: "_understack_runbook_source", sourceValue: "IronicRunbook",
	},
}

// keys are the marker's entries of extra.
func (m markerSet) keys() map[string]any {
	return map[string]any{m.owner: m.ownerValue, m.version: m.versionValue, m.source: m.sourceValue}
}

// owns reports whether a runbook's extra carries the marker.
func (m markerSet) owns(extra map[string]any) bool { return extra[m.owner] == m.ownerValue }

// names are the marker's keys, for log lines and spec checks.
func (m markerSet) names() []string { return []string{m.owner, m.version, m.source} }

func (m markerSet) String() string { return fmt.Sprintf("extra %s=%s", m.owner, m.ownerValue) }

// swapped is extra with from's keys replaced by to's: every other key is kept, so the runbook
// keeps whatever its CR (or a person) put there. One PATCH writes it: the runbook is never without
// a marker of either profile.
func swapped(extra map[string]any, from, to markerSet) map[string]any {
	out := maps.Clone(extra)
	if out == nil {
		out = map[string]any{}
	}
	for _, k := range from.names() {
		delete(out, k)
	}
	maps.Copy(out, to.keys())
	return out
}

// ownership is one run's view of the markers: its profile's, and the other's (compat.Ownership).
type ownership = compat.Ownership[markerSet]

func ownershipOf(p compat.Profile) ownership { return compat.OwnershipOf(p, markersOf) }

func ownershipFor(ctx *pdk.Context) (ownership, error) { return compat.OwnershipFor(ctx, markersOf) }

// foreign reports the error of a runbook that carries only the other profile's marker.
func foreign(o ownership, rb *runbook) error {
	if rb == nil || o.Own.owns(rb.Extra) || !o.Other.owns(rb.Extra) {
		return nil
	}
	return &compat.ForeignError{What: fmt.Sprintf("runbook %q (%s)", rb.Name, rb.UUID), Profile: o.Profile.Other(), Marker: o.Other.String()}
}
