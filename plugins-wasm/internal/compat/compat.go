// Package compat reads the profile a first-party plugin runs under (config PROFILE, the hook's
// <PREFIX>_PROFILE; docs/migrating.md) and holds what the profiles share across plugins. Each
// plugin keeps its own ownership markers per profile in its markers.go, next to the code that
// writes them.
package compat

import (
	"fmt"

	"github.com/openstack-sync/openstack-sync/pdk"
)

// Profile is one set of identifiers the plugin works under.
type Profile string

const (
	// OpenStackSync is this project's identifiers (the default).
	OpenStackSync Profile = "openstack-sync"
	// Understack is the original operator's (rackerlabs/understack).
	Understack Profile = "understack"
)

// ConfigKey is the config key the plugin reads its profile from.
const ConfigKey = "PROFILE"

// Parse reads a profile name; "" is the default.
func Parse(s string) (Profile, error) {
	switch Profile(s) {
	case "", OpenStackSync:
		return OpenStackSync, nil
	case Understack:
		return Understack, nil
	}
	return "", fmt.Errorf("config %s (the hook's <PREFIX>_%s) must be %s or %s; got %q", ConfigKey, ConfigKey, OpenStackSync, Understack, s)
}

// Of is the profile of the hook the plugin runs in. The host refuses a bad value before any
// plugin call; a plugin run some other way gets a permanent error naming the key.
func Of(ctx *pdk.Context) (Profile, error) {
	v, _ := ctx.Config(ConfigKey)
	p, err := Parse(v)
	if err != nil {
		return "", pdk.Permanent(err)
	}
	return p, nil
}

// Other is the profile whose markers a resource of this profile's must not be taken over from.
func (p Profile) Other() Profile {
	if p == Understack {
		return OpenStackSync
	}
	return Understack
}

// OriginalReasons makes a reconcile's outcome name only the reasons the original operator named
// under the understack profile: its plugins failed with ReconcileError (the host's default) save
// for the few reasons they named themselves, which a plugin passes as keep. Alerts built on the
// original's status keep matching. Under any other profile the outcome is returned as it is.
func (p Profile) OriginalReasons(res *pdk.Result, err error, keep ...string) (*pdk.Result, error) {
	if p != Understack {
		return res, err
	}
	if r := pdk.Reason(err); r != "" && !contains(keep, r) {
		// An empty reason outermost hides every reason in the chain from the host.
		err = &pdk.ReasonError{Err: err}
	}
	if res != nil && res.Lifecycle != nil && !contains(keep, res.Lifecycle.ReadyReason) {
		l := *res.Lifecycle
		l.ReadyReason = ""
		cp := *res
		cp.Lifecycle = &l
		res = &cp
	}
	return res, err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ForeignError is a resource a CR names that carries the ownership marker of the other profile
// only: taking it over would strip the marker the other profile's operator, or a move under way
// (openstack-sync migrate), depends on. The CR fails until the operator picks the right profile
// or finishes the move.
type ForeignError struct {
	// What names the resource, e.g. `runbook "bios" (uuid)`.
	What    string
	Profile Profile
	// Marker describes the other profile's marker as found, e.g. an extra key and its value.
	Marker string
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("%s carries the ownership marker of the %s profile (%s), not this hook's: set the hook's <PREFIX>_%s=%s "+
		"(chart: compatibility.profile) if that operator is replaced, or finish moving it with openstack-sync migrate",
		e.What, e.Profile, e.Marker, ConfigKey, e.Profile)
}

// Ownership is what one run's profile makes of a plugin's markers M (one entry of its table
// keyed by profile): its own, which it writes and owns by, and the other profile's, whose
// resources it never takes over.
type Ownership[M any] struct {
	Profile    Profile
	Own, Other M
}

// OwnershipOf is profile p's view of the plugin's marker table.
func OwnershipOf[M any](p Profile, table map[Profile]M) Ownership[M] {
	return Ownership[M]{Profile: p, Own: table[p], Other: table[p.Other()]}
}

// OwnershipFor is the view of the hook's profile (Of).
func OwnershipFor[M any](ctx *pdk.Context, table map[Profile]M) (Ownership[M], error) {
	p, err := Of(ctx)
	if err != nil {
		return Ownership[M]{}, err
	}
	return OwnershipOf(p, table), nil
}

// Grouped is a marker that can record the credential group of a request (compat.Group): InGroup
// returns it for c's group, and a no-op for a profile whose marker records none.
type Grouped[M any] interface {
	InGroup(c pdk.Credentials) (M, error)
}

// OwnershipForGroup is the view of the hook's profile (OwnershipFor) for the credential group of
// a request, checked before any request is sent.
func OwnershipForGroup[M Grouped[M]](ctx *pdk.Context, table map[Profile]M, c pdk.Credentials) (Ownership[M], error) {
	o, err := OwnershipFor(ctx, table)
	if err != nil {
		return o, err
	}
	o.Own, err = o.Own.InGroup(c)
	return o, err
}
