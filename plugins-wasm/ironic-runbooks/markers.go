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
	// group is the key recording the credential group that owns the runbook (compat.Group), under
	// a profile that prunes per group; "" under the original's, whose marker records none.
	group string
	// groupValue is the group of the request in hand (InGroup): the one a reconcile writes and
	// a prune deletes for.
	groupValue string
}

// markersOf is every profile's marker (docs/migrating.md): this project's, and the original
// operator's exactly as its ironic runbooks plugin writes it (rackerlabs/understack, markers.py).
var markersOf = map[compat.Profile]markerSet{
	compat.OpenStackSync: {
		owner: "openstack-sync.io/managed-by", ownerValue: "ironic-runbooks",
		version: "openstack-sync.io/marker-version", versionValue: "v1",
		source: "openstack-sync.io/source", sourceValue: "IronicRunbook",
		group: "openstack-sync.io/credential-group",
	},
	compat.Understack: {
		owner: "_understack_runbook_operator", ownerValue: "managed",
		version: "_understack_runbook_marker_version", versionValue: "v1",
		source: "_understack_runbook_source", sourceValue: "IronicRunbook",
	},
}

// keys are the marker's entries of extra: the group's too once the request named it.
func (m markerSet) keys() map[string]any {
	k := map[string]any{m.owner: m.ownerValue, m.version: m.versionValue, m.source: m.sourceValue}
	if m.group != "" && m.groupValue != "" {
		k[m.group] = m.groupValue
	}
	return k
}

// InGroup is m for the credential group of the request in hand (a no-op under a profile whose
// marker records no group).
func (m markerSet) InGroup(c pdk.Credentials) (markerSet, error) {
	if m.group == "" {
		return m, nil
	}
	g, err := compat.Group(c)
	m.groupValue = g
	return m, err
}

// marked reports whether a runbook's extra carries the profile's marker, for whichever group.
func (m markerSet) marked(extra map[string]any) bool { return extra[m.owner] == m.ownerValue }

// owns reports whether a runbook's extra carries the marker of the request's group: only such a
// runbook is pruned.
func (m markerSet) owns(extra map[string]any) bool {
	return m.marked(extra) && (m.group == "" || extra[m.group] == m.groupValue)
}

// groupOf is the group a marked runbook's extra records ("" for none: one marked before markers
// recorded their group, which the reconcile of the CR naming it brings up to date).
func (m markerSet) groupOf(extra map[string]any) string {
	if m.group == "" {
		return ""
	}
	g, _ := extra[m.group].(string)
	return g
}

// names are the marker's keys, for log lines and spec checks.
func (m markerSet) names() []string {
	if m.group == "" {
		return []string{m.owner, m.version, m.source}
	}
	return []string{m.owner, m.version, m.source, m.group}
}

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

// groupOwnership is the hook's profile's view for the credential group of a request.
func groupOwnership(ctx *pdk.Context, c pdk.Credentials) (ownership, error) {
	return compat.OwnershipForGroup(ctx, markersOf, c)
}

// foreign reports the error of a runbook that carries only the other profile's marker, or this
// profile's for another credential group.
func foreign(o ownership, rb *runbook) error {
	switch {
	case rb == nil:
		return nil
	case o.Own.marked(rb.Extra):
		if g := o.Own.groupOf(rb.Extra); g != "" && g != o.Own.groupValue {
			return &compat.OtherGroupError{What: fmt.Sprintf("runbook %q (%s)", rb.Name, rb.UUID), Group: g, Mine: o.Own.groupValue,
				Marker: "extra " + o.Own.group}
		}
		return nil
	case !o.Other.marked(rb.Extra):
		return nil
	}
	return &compat.ForeignError{What: fmt.Sprintf("runbook %q (%s)", rb.Name, rb.UUID), Profile: o.Profile.Other(), Marker: o.Other.String()}
}
