package compat

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/openstack-sync/openstack-sync/pdk"
)

// Under this project's profile the first-party plugins prune per credential group
// (pdk.PruneScopeGroup, docs/contract.md §7.1): their ownership marker records the group that
// wrote it, so one group's failure no longer holds back another group's deletions. The original
// operator's markers record no group, so under its profile they prune across groups, as it did.

// maxReadableGroup bounds the group as the marker records it: Neutron tags and descriptions are
// short, and a Secret's name alone may be 253 characters.
const maxReadableGroup = 128

// Group is the credential group c as a marker records it: "<namespace>/<secret>/<cloud>", which
// an operator reading OpenStack can follow back to the Secret; or, when that is longer than 128
// characters or holds a comma (Neutron's tag filters split on commas), "sha256:" and the first 32
// hex digits of its SHA-256. The same group always gives the same text. A request without a group
// (a host that ignored the plugin's prune_scope) is a permanent error: a marker without its group
// could be pruned by no group, or taken for another's.
func Group(c pdk.Credentials) (string, error) {
	if c == (pdk.Credentials{}) {
		return "", pdk.Permanent(errors.New("the request names no credential group, but this plugin prunes per group " +
			"and records the group in its ownership marker; run it with a host that honours prune_scope group"))
	}
	g := c.Namespace + "/" + c.SecretName + "/" + c.CloudName
	if len(g) <= maxReadableGroup && !strings.ContainsRune(g, ',') {
		return g, nil
	}
	sum := sum256([]byte(g))
	return "sha256:" + hex.EncodeToString(sum[:16]), nil
}

// OtherGroupError is a resource a CR names that carries this profile's marker for another
// credential group: each resource is owned by one group, whose prune alone may delete it, so the
// CR fails rather than take it over (docs/contract.md §7.1).
type OtherGroupError struct {
	// What names the resource, e.g. `runbook "bios" (uuid)`.
	What string
	// Group is the group its marker records; Mine the CR's.
	Group, Mine string
	// Marker says where the group is recorded, e.g. "extra openstack-sync.io/credential-group".
	Marker string
}

func (e *OtherGroupError) Error() string {
	return fmt.Sprintf("%s is owned by credential group %s (%s), not this CR's %s: a resource belongs to one group, whose "+
		"prune alone deletes it; give this CR another name, or delete the other group's CR (its prune then deletes the "+
		"resource), or, when that group has no CRs left (they moved to another Secret), remove %s from the resource and the "+
		"next run adopts it", e.What, e.Group, e.Marker, e.Mine, e.Marker)
}
