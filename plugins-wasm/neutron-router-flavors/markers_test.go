package main

import (
	"github.com/openstack-sync/openstack-sync/pdk/pdktest"
	"github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"
)

// ours is this project's marker for pdktest's credential group (pdktest.Group), which its
// requests name, for tests of the default profile.
var ours = func() markerSet {
	m, err := markersOf[compat.OpenStackSync].InGroup(pdktest.Group)
	if err != nil {
		panic(err)
	}
	return m
}()

func defaultOwnership() ownership {
	o := ownershipOf(compat.OpenStackSync)
	o.Own = ours
	return o
}
