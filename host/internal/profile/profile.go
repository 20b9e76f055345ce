// Package profile names the identifiers a hook works under (docs/migrating.md): this project's
// own, or those of the original Python operator (rackerlabs/understack), so a site running the
// original can be taken over with a helm upgrade and handed back the same way.
//
// A profile decides what the framework writes on Kubernetes objects: the finalizer name and the
// shape of the status. What a plugin writes on OpenStack resources (its ownership markers) is the
// plugin's own business: it reads the same setting as its config PROFILE (docs/pdk.md).
package profile

import (
	"fmt"
	"strings"
)

// Profile is one set of identifiers. The zero value is OpenStackSync, so a configuration that
// never names a profile keeps this project's behaviour.
type Profile string

const (
	// OpenStackSync is this project's identifiers: openstack-sync.io CRD groups, finalizer and
	// markers, and the status of docs/operators/status.md.
	OpenStackSync Profile = "openstack-sync"
	// Understack is the original operator's: its CRD groups (understack.rackspace.net), its
	// finalizer, its plugins' ownership markers and the status it writes.
	Understack Profile = "understack"
)

// The finalizers of the two profiles.
const (
	FinalizerOpenStackSync = "openstack-sync.io/finalizer"
	FinalizerUnderstack    = "openstack-sync.understack.rackspace.net/finalizer"
)

// Variable is the suffix of the hook's variable naming its profile: <P>_PROFILE. The same
// variable reaches the plugin as its config PROFILE.
const Variable = "PROFILE"

// All are the profiles this host knows, the default first.
var All = []Profile{OpenStackSync, Understack}

// Parse reads a profile name; "" is the default.
func Parse(s string) (Profile, error) {
	switch Profile(s) {
	case "", OpenStackSync:
		return OpenStackSync, nil
	case Understack:
		return Understack, nil
	}
	return "", fmt.Errorf("must be %s; got %q", names(), s)
}

func names() string {
	var out []string
	for _, p := range All {
		out = append(out, string(p))
	}
	return strings.Join(out, " or ")
}

// String is the profile's name; the zero value names the default.
func (p Profile) String() string {
	if p == "" {
		return string(OpenStackSync)
	}
	return string(p)
}

// Finalizer is the finalizer the framework adds, holds and releases on the CRs of this profile.
func (p Profile) Finalizer() string {
	if p == Understack {
		return FinalizerUnderstack
	}
	return FinalizerOpenStackSync
}

// Other is the profile whose identifiers a CR or resource of this one must not carry: the one a
// site moves from or to.
func (p Profile) Other() Profile {
	if p == Understack {
		return OpenStackSync
	}
	return Understack
}

// OriginalStatus reports whether the status is written in the original's shape: syncStatus
// Synced or Failed, one Ready condition, and none of the lifecycle fields (status.id,
// status.resource, the Available and Progressing conditions) that its CRDs do not declare.
func (p Profile) OriginalStatus() bool { return p == Understack }
