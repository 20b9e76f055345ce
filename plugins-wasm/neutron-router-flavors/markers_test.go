package main

import "github.com/openstack-sync/openstack-sync/plugins-wasm/internal/compat"

// ours is this project's marker, for tests of the default profile.
var ours = markersOf[compat.OpenStackSync]

func defaultOwnership() ownership { return ownershipOf(compat.OpenStackSync) }
