package main

import "github.com/openstack-sync/openstack-sync/pdk"

var (
	// runbooksVersion introduced /v1/runbooks: the oldest Ironic API the plugin works with.
	runbooksVersion = pdk.APIVersion{Major: 1, Minor: 92}
	// traitsVersion introduced runbook traits and descriptions.
	traitsVersion = pdk.APIVersion{Major: 1, Minor: 112}
	// newestKnown caps the version the plugin asks for: it speaks what it was written against,
	// not whatever a newer Ironic might change.
	newestKnown = traitsVersion
)
