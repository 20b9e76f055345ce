package pluginpass

import "testing"

// scenario is one operator situation, written once against the OpenStack API so that it runs on
// both clouds. fakeOnly, when set, says why the real servers cannot play it.
type scenario struct {
	plugin, name string
	run          func(t *testing.T, b backend)
	fakeOnly     string
}

var scenarios = []scenario{
	{plugin: "openstack-probe", name: "passes-fails-skipped", run: probe("openstack-probe", "OPENSTACK_PROBE")},
	{plugin: "openstack-probe-c", name: "passes-fails-skipped", run: probe("openstack-probe-c", "OPENSTACK_PROBE_C")},
	{plugin: "neutron-router-flavors", name: "create-converge-drift-notes", run: routerFlavorLifecycle},
	{plugin: "neutron-router-flavors", name: "adopts-unowned", run: routerFlavorAdoptsAnUnownedFlavor},
	{plugin: "neutron-router-flavors", name: "prune-orphan-unowned-in-use", run: routerFlavorPrune},
	{plugin: "neutron-router-flavors", name: "unmanaged-import-by-filter", run: routerFlavorImport},
	{plugin: "neutron-segment-ranges", name: "create-converge-drift-immutable", run: segmentRangeLifecycle},
	{plugin: "neutron-segment-ranges", name: "adopts-by-name", run: segmentRangeAdoptsByName},
	{plugin: "neutron-segment-ranges", name: "unmanaged-import-by-filter", run: segmentRangeImport},
	{plugin: "neutron-segment-ranges", name: "lost-status-write-and-recreate", run: segmentRangeLostStatusAndRecreate},
	{plugin: "ironic-runbooks", name: "create-converge-drift-notes-1.96", run: runbookLifecycleOnTrixieIronic},
	{plugin: "ironic-runbooks", name: "traits-at-1.112", run: runbookTraitsAt1112,
		fakeOnly: "runbook traits and description need Ironic API 1.112; Debian 13's Ironic (the harness) offers 1.96"},
	{plugin: "ironic-runbooks", name: "adopts-unowned-refuses-invalid-name", run: runbookAdoptionAndInvalidName},
	{plugin: "ironic-runbooks", name: "prune-orphan-unowned-in-use", run: runbookPrune},
	{plugin: "neutron-subnet-pools", name: "scopes-create-adopt-byid-grow-note-adopt-prune", run: subnetPoolLifecycle},
	{plugin: "neutron-subnet-pools", name: "faults-fail-the-cr-write-nothing-skip-prune", run: subnetPoolFaults,
		fakeOnly: "the faults are Nautobot's, the Secret's and the CR's URL; Neutron is never reached (asserted on the fake)"},
}

// TestScenarios plays every scenario against the in-process cloud.
func TestScenarios(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.plugin+"/"+sc.name, func(t *testing.T) { sc.run(t, fake) })
	}
}
